package bindings

import (
	"context"
	"time"
)

// PruneStats counts what one Prune deleted.
type PruneStats struct {
	// Runs deleted (each with its journal, snapshot and approvals).
	Runs int `json:"runs"`
	// JournalEntries of the deleted runs.
	JournalEntries int `json:"journalEntries"`
	// Snapshots of the deleted runs.
	Snapshots int `json:"snapshots"`
	// Approvals asked for by the deleted runs.
	Approvals int `json:"approvals"`
}

// Add returns the sum of two counts.
func (s PruneStats) Add(o PruneStats) PruneStats {
	return PruneStats{
		Runs:           s.Runs + o.Runs,
		JournalEntries: s.JournalEntries + o.JournalEntries,
		Snapshots:      s.Snapshots + o.Snapshots,
		Approvals:      s.Approvals + o.Approvals,
	}
}

// Pruner deletes runs nobody will drive again, so that journals, snapshots
// and approvals do not grow forever. It is an optional capability of a
// RunBinding, discovered by type assertion; the store that implements it
// also holds the run's snapshot and approvals (memstore and pgstore do).
//
// Prune deletes, for one tenant, every run that is not held by a live
// lease (no owner, or a lease that expired by the store's clock), was last
// updated before olderThan, and is either
//
//   - finished: completed or failed; or
//   - parked for good: suspended, with at least one approval, every one of
//     which expired before olderThan and was marked expired
//     (ApprovalSweeper.MarkApprovalExpired: its on-timeout action was
//     applied).
//
// With a run it deletes its journal entries, its snapshot and the
// approvals it asked for, and it counts them. It never deletes a running
// run, a suspended run with an approval that is still pending (waiting on
// a reviewer, or expired but not yet moved to its timeout outcome), or one
// with a decided approval nobody has resumed yet. Conversations and their
// messages are not touched: they outlive the runs that wrote them.
//
// Prune is tenant-scoped like every binding call, works in batches (a
// store may commit each batch on its own, so a cancelled Prune may have
// deleted some runs: the stats count them), and concurrent Prunes of the
// same tenant delete each run once: summed, their stats count every
// deleted row exactly once.
type Pruner interface {
	Prune(ctx context.Context, tenantID string, olderThan time.Time) (PruneStats, error)
}

// ApprovalRef names one approval a sweep should look at.
type ApprovalRef struct {
	TenantID   string    `json:"tenantId"`
	ApprovalID string    `json:"approvalId"`
	RunID      string    `json:"runId"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// ExpiredApprovalsInput asks for one page of expired approvals.
type ExpiredApprovalsInput struct {
	// Now is the time the approvals must have expired by.
	Now time.Time `json:"now"`
	// After, when its ApprovalID is set, is the last ref of the previous
	// page: the page starts after it in the listing order.
	After ApprovalRef `json:"after"`
	// Limit caps the page (at least 1; a store may cap it further).
	Limit int `json:"limit"`
}

// ApprovalSweeper finds parked runs whose approval timed out: an optional
// capability of a HitlBinding, discovered by type assertion, used by
// turn.ExpireApprovals. The store that implements it also holds the runs
// (memstore and pgstore do).
//
// ExpiredApprovals lists, across every tenant (a sweep is an operator's
// job, run by workers), the approvals that are pending, have a non-zero
// ExpiresAt at or before in.Now (by the store's rule for expiry: pgstore's
// is strictly before), have not been marked expired, and belong to a run
// whose status is suspended. The listing is ordered by (ExpiresAt,
// TenantID, ApprovalID); in.After continues it (keyset pagination), so a
// sweep makes progress past approvals it cannot move. It reveals only
// references: everything else is read through tenant-scoped calls.
// pgstore lists across tenants only when connected as a database role
// that is a member of kindgi_sweeper, or one that bypasses row-level
// security (see its package doc); for any other role it lists nothing.
//
// MarkApprovalExpired records, once the approval's on-timeout action has
// been applied, that a pending approval past its expiry (by the store's
// clock) expired for good: it reads as ApprovalExpired, with ResolvedAt
// the time it was marked, and ExpiredApprovals no longer lists it. It
// returns the approval as stored: a decided, already marked or not yet
// expired approval is returned unchanged. An unknown approval (or one of
// another tenant) is *agents.ApprovalNotFoundError.
type ApprovalSweeper interface {
	ExpiredApprovals(ctx context.Context, in ExpiredApprovalsInput) ([]ApprovalRef, error)
	MarkApprovalExpired(ctx context.Context, tenantID, approvalID string) (Approval, error)
}

// ApprovalRefLess orders refs as ExpiredApprovals lists them: by
// ExpiresAt, then TenantID, then ApprovalID.
func ApprovalRefLess(a, b ApprovalRef) bool {
	return keysetLess(a.ExpiresAt, a.TenantID, a.ApprovalID, b.ExpiresAt, b.TenantID, b.ApprovalID)
}
