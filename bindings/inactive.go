package bindings

import (
	"context"
	"time"
)

// Idle conversations (the agent's conversationPolicy
// autoCloseAfterInactiveSeconds).
//
// A conversation is idle since the time of its last message: its
// LastActivityAt, the latest CreatedAt of its messages (its OpenedAt before
// the first one). Reading it changes nothing; only appending a message
// does. A conversation whose agent sets autoCloseAfterInactiveSeconds = N
// is due to close once it has been idle for more than N seconds: at a time
// now with now - LastActivityAt > N s, that is LastActivityAt before
// now - N s.

// InactiveConversationRef names an open conversation that has been idle
// since LastActivityAt.
type InactiveConversationRef struct {
	TenantID       string    `json:"tenantId"`
	ConversationID string    `json:"conversationId"`
	AgentID        string    `json:"agentId"`
	AgentVersion   string    `json:"agentVersion"`
	LastActivityAt time.Time `json:"lastActivityAt"`
}

// InactiveConversationsInput asks for open conversations of every tenant
// whose LastActivityAt is before IdleBefore, in the order (LastActivityAt,
// TenantID, ConversationID) — oldest activity first, ids compared
// byte-wise — at most Limit (at least 1), after After when its
// ConversationID is set (keyset pagination).
type InactiveConversationsInput struct {
	IdleBefore time.Time               `json:"idleBefore"`
	After      InactiveConversationRef `json:"after,omitzero"`
	Limit      int                     `json:"limit"`
}

// InactiveConversationLister is an optional capability of a
// ConversationBinding: the listing and the conditional close that the
// auto-close sweep (turn.CloseInactive) runs on.
//
// ListInactiveConversations returns references only (everything else is
// read through tenant-scoped calls), across tenants; a Limit below 1 is
// *agents.InvalidMessageError. pgstore lists across tenants only for a
// database role that is a member of kindgi_sweeper (or bypasses row-level
// security), as for the approval sweep; for any other role it lists
// nothing.
//
// CloseIfInactive closes a tenant's conversation only if it is open and
// its LastActivityAt is still before idleBefore, as one atomic step with
// respect to AppendMessage: a message appended meanwhile keeps the
// conversation open, and of a close and an append that race, either the
// append is stored and the conversation stays open, or the conversation is
// closed and the append is *agents.ConversationClosedError. closed reports
// whether this call closed it (false when it was closed already, or is
// not idle enough); an unknown conversation (or another tenant's) is
// *agents.ConversationNotFoundError. Many sweeps may run it on the same
// conversation at once: exactly one reports closed.
type InactiveConversationLister interface {
	ListInactiveConversations(ctx context.Context, in InactiveConversationsInput) ([]InactiveConversationRef, error)
	CloseIfInactive(ctx context.Context, tenantID, conversationID string, idleBefore time.Time) (closed bool, err error)
}

// InactiveConversationRefLess orders refs as ListInactiveConversations
// lists them.
func InactiveConversationRefLess(a, b InactiveConversationRef) bool {
	return keysetLess(a.LastActivityAt, a.TenantID, a.ConversationID, b.LastActivityAt, b.TenantID, b.ConversationID)
}

// IdleBefore returns the LastActivityAt before which a conversation whose
// agent closes it after seconds of inactivity is due to close at now.
func IdleBefore(now time.Time, seconds int) time.Time {
	return now.Add(-time.Duration(seconds) * time.Second)
}
