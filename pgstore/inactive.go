package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

var _ bindings.InactiveConversationLister = (*Store)(nil)

// setIdleSweepSQL admits the auto-close sweep's read across tenants for a
// member of kindgi_sweeper (see migrations/0001_baseline.up.sql),
// transaction-local, for the one SELECT that follows it in the batch.
const setIdleSweepSQL = `SELECT set_config('kindgi.sweep', 'inactive-conversations', true)`

// sqlInactiveConversations lists open conversations idle since before $1,
// after ($3, $4, $5) when $2, in the order of agent_conversations_idle_idx.
const sqlInactiveConversations = `SELECT tenant_id, id, agent_id, agent_version, last_activity_at
	FROM agent_conversations
	WHERE status = 'open' AND last_activity_at < $1
	  AND (NOT $2 OR (last_activity_at, tenant_id COLLATE "C", id COLLATE "C") > ($3::timestamptz, $4::text COLLATE "C", $5::text COLLATE "C"))
	ORDER BY last_activity_at, tenant_id COLLATE "C", id COLLATE "C"
	LIMIT $6`

// sqlCloseIfInactive closes an open conversation whose last activity is
// before $3 ($4 is now). The row lock it takes is the one an append's
// kindgi_append_message takes, so a close and an append are serialised.
const sqlCloseIfInactive = `UPDATE agent_conversations
	SET status = 'closed', closed_at = $4
	WHERE tenant_id = $1 AND id = $2 AND status = 'open' AND last_activity_at < $3`

// ListInactiveConversations implements bindings.InactiveConversationLister.
// It reads across tenants through the FOR SELECT policy of the baseline migration,
// which admits only open conversations, only to members of kindgi_sweeper,
// only in a transaction that set kindgi.sweep; it returns references only.
func (s *Store) ListInactiveConversations(ctx context.Context, in bindings.InactiveConversationsInput) ([]bindings.InactiveConversationRef, error) {
	if err := checkSweepPage(in.Limit, in.After.TenantID, "after conversation id", in.After.ConversationID); err != nil {
		return nil, err
	}
	// Stored times are whole microseconds: one is before IdleBefore
	// exactly when it is before IdleBefore rounded up to the microsecond.
	before := ceilMicro(in.IdleBefore)
	return writeThenReadAll(ctx, s, "list inactive conversations", "", scanInactiveRef, &stmt{sql: setIdleSweepSQL},
		stmt{sqlInactiveConversations, []any{before, in.After.ConversationID != "", in.After.LastActivityAt.UTC(), in.After.TenantID, in.After.ConversationID, in.Limit}})
}

func scanInactiveRef(row pgx.CollectableRow) (bindings.InactiveConversationRef, error) {
	var r bindings.InactiveConversationRef
	err := row.Scan(&r.TenantID, &r.ConversationID, &r.AgentID, &r.AgentVersion, &r.LastActivityAt)
	r.LastActivityAt = utc(r.LastActivityAt)
	return r, err
}

// CloseIfInactive implements bindings.InactiveConversationLister with a
// conditional UPDATE, then tells a missing conversation from one that was
// not closed, in the same transaction.
func (s *Store) CloseIfInactive(ctx context.Context, tenantID, conversationID string, idleBefore time.Time) (bool, error) {
	if err := bindings.CheckLookup(tenantID, "conversation id", conversationID); err != nil {
		return false, err
	}
	var closed, found bool
	err := s.batch(ctx, "close inactive conversation", tenantID, func(b *pgx.Batch) {
		b.Queue(sqlCloseIfInactive, tenantID, conversationID, ceilMicro(idleBefore), s.stamp(time.Time{}))
		b.Queue(sqlConversationExists, tenantID, conversationID)
	}, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		if err != nil {
			return err
		}
		closed = tag.RowsAffected() == 1
		return br.QueryRow().Scan(&found)
	})
	if err != nil {
		return false, err
	}
	if !found {
		return false, &agents.ConversationNotFoundError{ConversationID: conversationID}
	}
	return closed, nil
}
