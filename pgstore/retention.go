package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kindgi/agents/bindings"
)

var (
	_ bindings.Pruner          = (*Store)(nil)
	_ bindings.ApprovalSweeper = (*Store)(nil)
)

// pruneBatch is how many runs one Prune transaction deletes (with their
// journals, snapshots and approvals): small enough that a transaction
// holds few row locks and its WAL stays modest, large enough that a
// round trip deletes thousands of journal rows.
const pruneBatch = 200

// sqlPruneBatch deletes one batch of a tenant's prunable runs ($1 tenant,
// $2 olderThan, $3 now for the lease check, $4 batch size) with their
// journal entries, snapshots and approvals, and counts each. The runs are
// locked FOR UPDATE SKIP LOCKED, so concurrent Prunes take disjoint
// batches and a run being leased or appended to right now is left for the
// next Prune. agent_runs_prune_idx serves the batch in update order.
const sqlPruneBatch = `WITH doomed AS (
		SELECT r.id FROM agent_runs r
		WHERE r.tenant_id = $1 AND r.status <> 'running' AND r.updated_at < $2
		  AND (r.lease_owner = '' OR r.lease_expires_at IS NULL OR r.lease_expires_at <= $3)
		  AND (r.status IN ('completed', 'failed') OR (r.status = 'suspended'
		    AND EXISTS (SELECT 1 FROM agent_approvals a WHERE a.tenant_id = r.tenant_id AND a.run_id = r.id)
		    AND NOT EXISTS (SELECT 1 FROM agent_approvals a WHERE a.tenant_id = r.tenant_id AND a.run_id = r.id
		      AND NOT (a.status = 'expired' AND a.expires_at < $2))))
		ORDER BY r.updated_at, r.id
		LIMIT $4
		FOR UPDATE OF r SKIP LOCKED
	), journal AS (
		DELETE FROM agent_run_journal j USING doomed d WHERE j.tenant_id = $1 AND j.run_id = d.id RETURNING 1
	), snapshots AS (
		DELETE FROM agent_run_snapshots s USING doomed d WHERE s.tenant_id = $1 AND s.run_id = d.id RETURNING 1
	), approvals AS (
		DELETE FROM agent_approvals a USING doomed d WHERE a.tenant_id = $1 AND a.run_id = d.id RETURNING 1
	), runs AS (
		DELETE FROM agent_runs r USING doomed d WHERE r.tenant_id = $1 AND r.id = d.id RETURNING 1
	)
	SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM journal),
		(SELECT count(*) FROM snapshots), (SELECT count(*) FROM approvals)`

// Prune implements bindings.Pruner. It deletes in batches of pruneBatch
// runs, each its own transaction under the tenant's row-level security
// setting, until a batch comes back short; the stats count what the
// committed batches deleted, also when a later batch fails.
func (s *Store) Prune(ctx context.Context, tenantID string, olderThan time.Time) (bindings.PruneStats, error) {
	return s.prune(ctx, tenantID, olderThan, pruneBatch)
}

func (s *Store) prune(ctx context.Context, tenantID string, olderThan time.Time, batch int) (bindings.PruneStats, error) {
	var total bindings.PruneStats
	if err := bindings.CheckID("tenant id", tenantID); err != nil {
		return total, err
	}
	cutoff := ceilMicro(olderThan)
	for {
		var st bindings.PruneStats
		now := s.stamp(time.Time{})
		err := s.batch(ctx, "prune runs", tenantID, func(b *pgx.Batch) {
			b.Queue(sqlPruneBatch, tenantID, cutoff, now, batch)
		}, func(br pgx.BatchResults) error {
			return br.QueryRow().Scan(&st.Runs, &st.JournalEntries, &st.Snapshots, &st.Approvals)
		})
		if err != nil {
			return total, err
		}
		total = total.Add(st)
		if st.Runs < batch {
			return total, nil
		}
	}
}

// ceilMicro rounds t up to PostgreSQL's microsecond precision, so that
// "stored < t" compares the way it does on t itself.
func ceilMicro(t time.Time) time.Time {
	t = t.UTC()
	if c := t.Truncate(time.Microsecond); !c.Equal(t) {
		return c.Add(time.Microsecond)
	}
	return t
}

// setSweepSQL admits the sweep's read across tenants for a member of
// kindgi_sweeper (see migrations/0001_baseline.up.sql): transaction-local,
// for the one SELECT that follows it in the same batch.
const setSweepSQL = `SELECT set_config('kindgi.sweep', 'expired-approvals', true)`

const sqlExpiredApprovalsHead = `SELECT a.tenant_id, a.id, a.run_id, a.expires_at FROM agent_approvals a
	WHERE a.status = 'pending' AND a.expires_at IS NOT NULL AND a.expires_at < $1
	  AND EXISTS (SELECT 1 FROM agent_runs r WHERE r.tenant_id = a.tenant_id AND r.id = a.run_id AND r.status = 'suspended')`

const sqlExpiredApprovalsTail = `
	ORDER BY a.expires_at, a.tenant_id COLLATE "C", a.id COLLATE "C"
	LIMIT $2`

const sqlExpiredApprovals = sqlExpiredApprovalsHead + sqlExpiredApprovalsTail

// sqlExpiredApprovalsAfter continues the listing after the ref ($3
// expires_at, $4 tenant, $5 id), under the byte-wise order of the index.
const sqlExpiredApprovalsAfter = sqlExpiredApprovalsHead + `
	  AND (a.expires_at, a.tenant_id COLLATE "C", a.id COLLATE "C") > ($3::timestamptz, $4::text COLLATE "C", $5::text COLLATE "C")` +
	sqlExpiredApprovalsTail

// ExpiredApprovals implements bindings.ApprovalSweeper. It reads across
// tenants through the FOR SELECT policies of the baseline migration, which admit
// only pending approvals with an expiry and suspended runs, only to
// members of the role kindgi_sweeper, and only in a transaction that set
// kindgi.sweep; it returns references only. Connected as a role subject
// to row-level security that is not a member of kindgi_sweeper, it lists
// nothing. An approval expires strictly after its ExpiresAt (as
// GetApproval reports).
func (s *Store) ExpiredApprovals(ctx context.Context, in bindings.ExpiredApprovalsInput) ([]bindings.ApprovalRef, error) {
	if err := checkSweepPage(in.Limit, in.After.TenantID, "after approval id", in.After.ApprovalID); err != nil {
		return nil, err
	}
	now := ceilMicro(in.Now)
	r := stmt{sqlExpiredApprovals, []any{now, in.Limit}}
	if in.After.ApprovalID != "" {
		r = stmt{sqlExpiredApprovalsAfter, []any{now, in.Limit, in.After.ExpiresAt.UTC(), in.After.TenantID, in.After.ApprovalID}}
	}
	return writeThenReadAll(ctx, s, "list expired approvals", "", scanApprovalRef, &stmt{sql: setSweepSQL}, r)
}

func scanApprovalRef(row pgx.CollectableRow) (bindings.ApprovalRef, error) {
	var r bindings.ApprovalRef
	err := row.Scan(&r.TenantID, &r.ApprovalID, &r.RunID, &r.ExpiresAt)
	r.ExpiresAt = r.ExpiresAt.UTC()
	return r, err
}

// sqlMarkApprovalExpired marks a pending approval past its expiry ($3 is
// now) expired, for good.
const sqlMarkApprovalExpired = `UPDATE agent_approvals SET status = 'expired', resolved_at = $3
	WHERE tenant_id = $1 AND id = $2 AND status = 'pending' AND expires_at IS NOT NULL AND expires_at < $3`

// MarkApprovalExpired implements bindings.ApprovalSweeper with a
// conditional UPDATE: only a pending approval past its expiry by the
// store's clock changes; the approval is returned as stored.
func (s *Store) MarkApprovalExpired(ctx context.Context, tenantID, approvalID string) (bindings.Approval, error) {
	if err := bindings.CheckLookup(tenantID, "approval id", approvalID); err != nil {
		return bindings.Approval{}, err // before the clock is read, as ResolveApproval
	}
	now := s.stamp(time.Time{})
	return s.approvalAfter(ctx, "mark approval expired", tenantID, approvalID,
		&stmt{sqlMarkApprovalExpired, []any{tenantID, approvalID, now}})
}
