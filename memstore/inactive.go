package memstore

import (
	"context"
	"time"

	"github.com/kindgi/agents/bindings"
)

var _ bindings.InactiveConversationLister = (*Store)(nil)

// ListInactiveConversations implements bindings.InactiveConversationLister:
// the open conversations of every tenant idle since before in.IdleBefore,
// oldest activity first. It scans every conversation (memstore holds what
// one process holds).
func (s *Store) ListInactiveConversations(ctx context.Context, in bindings.InactiveConversationsInput) ([]bindings.InactiveConversationRef, error) {
	if err := alive(ctx); err != nil {
		return nil, err
	}
	if err := checkSweepPage(in.Limit, in.After.TenantID, "after conversation id", in.After.ConversationID); err != nil {
		return nil, err
	}
	refs := []bindings.InactiveConversationRef{}
	s.convMu.RLock()
	for tenant, tc := range s.convs {
		for id, r := range tc.byID {
			c := &r.c
			if c.Status != bindings.ConversationOpen || !c.LastActivityAt.Before(in.IdleBefore) {
				continue
			}
			ref := bindings.InactiveConversationRef{
				TenantID: tenant, ConversationID: id, AgentID: c.AgentID, AgentVersion: c.AgentVersion,
				LastActivityAt: c.LastActivityAt,
			}
			if in.After.ConversationID != "" && !bindings.InactiveConversationRefLess(in.After, ref) {
				continue
			}
			refs = append(refs, ref)
		}
	}
	s.convMu.RUnlock()
	return firstInOrder(refs, bindings.InactiveConversationRefLess, in.Limit), nil
}

// CloseIfInactive implements bindings.InactiveConversationLister under the
// lock AppendMessage takes, so a close and an append never interleave.
func (s *Store) CloseIfInactive(ctx context.Context, tenantID, conversationID string, idleBefore time.Time) (bool, error) {
	if err := lookupCall(ctx, tenantID, "conversation id", conversationID); err != nil {
		return false, err
	}
	s.convMu.Lock()
	defer s.convMu.Unlock()
	r, err := s.conv(tenantID, conversationID)
	if err != nil {
		return false, err
	}
	if r.c.Status != bindings.ConversationOpen || !r.c.LastActivityAt.Before(idleBefore) {
		return false, nil
	}
	now := s.now()
	r.c.Status = bindings.ConversationClosed
	r.c.ClosedAt = &now
	return true, nil
}
