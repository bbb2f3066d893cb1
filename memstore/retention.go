package memstore

import (
	"context"
	"slices"
	"time"

	"github.com/kindgi/agents/bindings"
)

var (
	_ bindings.Pruner          = (*Store)(nil)
	_ bindings.ApprovalSweeper = (*Store)(nil)
)

// Prune implements bindings.Pruner: it deletes the tenant's finished runs,
// and its runs parked on approvals that all expired and were marked
// expired, last updated before olderThan and not held by a live lease,
// with their journals, snapshots and approvals. It holds the run, approval
// and snapshot locks for the whole call, so concurrent Prunes run one
// after the other and delete each run once.
func (s *Store) Prune(ctx context.Context, tenantID string, olderThan time.Time) (bindings.PruneStats, error) {
	var st bindings.PruneStats
	if err := checkedCall(ctx, bindings.CheckID("tenant id", tenantID)); err != nil {
		return st, err
	}
	s.runMu.Lock()
	defer s.runMu.Unlock()
	s.hitlMu.Lock()
	defer s.hitlMu.Unlock()
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	now := s.now()

	// The tenant's approvals by run.
	byRun := map[string][]key{}
	for k, a := range s.approvals {
		if k.tenant == tenantID {
			byRun[a.Request.RunID] = append(byRun[a.Request.RunID], k)
		}
	}
	for k, r := range s.runs {
		if k.tenant != tenantID || !s.prunable(&r.run, byRun[k.id], olderThan, now) {
			continue
		}
		delete(s.runs, k)
		st.Runs++
		st.JournalEntries += r.journal.len()
		if _, ok := s.snapshots[k]; ok {
			delete(s.snapshots, k)
			st.Snapshots++
		}
		for _, ak := range byRun[k.id] {
			delete(s.approvals, ak)
			st.Approvals++
		}
	}
	return st, nil
}

// prunable applies Prune's rule to one run; approvals are the keys of the
// run's approvals. The caller holds runMu and hitlMu.
func (s *Store) prunable(r *bindings.Run, approvals []key, olderThan, now time.Time) bool {
	if !r.UpdatedAt.Before(olderThan) || heldByOther(r, "", now) {
		return false
	}
	switch r.Status {
	case bindings.RunCompleted, bindings.RunFailed:
		return true
	case bindings.RunSuspended:
		if len(approvals) == 0 {
			return false
		}
		for _, ak := range approvals {
			a := s.approvals[ak]
			if !marked(a) || !a.Request.ExpiresAt.Before(olderThan) {
				return false
			}
		}
		return true
	}
	return false
}

// marked reports whether a was marked expired by MarkApprovalExpired: it
// expired and its expiry was recorded with a resolution time. (GetApproval
// also records the expired status when it reads an approval past its
// expiry, but without ResolvedAt: that approval's on-timeout action may not
// have been applied yet.)
func marked(a *bindings.Approval) bool {
	return a.Status == bindings.ApprovalExpired && a.ResolvedAt != nil
}

// ExpiredApprovals implements bindings.ApprovalSweeper: the pending
// approvals of every tenant whose ExpiresAt is at or before in.Now and
// that are not marked expired, of runs that are suspended, in the order
// (ExpiresAt, TenantID, ApprovalID), after in.After.
func (s *Store) ExpiredApprovals(ctx context.Context, in bindings.ExpiredApprovalsInput) ([]bindings.ApprovalRef, error) {
	if err := alive(ctx); err != nil {
		return nil, err
	}
	if err := checkSweepPage(in.Limit, in.After.TenantID, "after approval id", in.After.ApprovalID); err != nil {
		return nil, err
	}
	var refs []bindings.ApprovalRef
	s.hitlMu.RLock()
	for k, a := range s.approvals {
		if marked(a) || (a.Status != bindings.ApprovalPending && a.Status != bindings.ApprovalExpired) {
			continue
		}
		exp := a.Request.ExpiresAt
		if exp.IsZero() || in.Now.Before(exp) {
			continue
		}
		ref := bindings.ApprovalRef{TenantID: k.tenant, ApprovalID: k.id, RunID: a.Request.RunID, ExpiresAt: exp}
		if in.After.ApprovalID != "" && !bindings.ApprovalRefLess(in.After, ref) {
			continue
		}
		refs = append(refs, ref)
	}
	s.hitlMu.RUnlock()

	s.runMu.RLock()
	refs = slices.DeleteFunc(refs, func(ref bindings.ApprovalRef) bool {
		r := s.runs[key{ref.TenantID, ref.RunID}]
		return r == nil || r.run.Status != bindings.RunSuspended
	})
	s.runMu.RUnlock()

	return firstInOrder(refs, bindings.ApprovalRefLess, in.Limit), nil
}

// MarkApprovalExpired implements bindings.ApprovalSweeper: a pending
// approval past its expiry by the store's clock becomes expired for good,
// with ResolvedAt now.
func (s *Store) MarkApprovalExpired(ctx context.Context, tenantID, approvalID string) (bindings.Approval, error) {
	return s.readApproval(ctx, tenantID, approvalID, true)
}
