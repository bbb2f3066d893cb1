package memstore

import (
	"context"
	"slices"
	"strings"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

func cloneApproval(a bindings.Approval) bindings.Approval {
	a.Request.Arguments = cloneJSON(a.Request.Arguments)
	a.ResolvedAt = cloneTime(a.ResolvedAt)
	return a
}

// expired reports whether a pending approval is past its expiry at now. A
// zero ExpiresAt never expires.
func expired(a *bindings.Approval, now time.Time) bool {
	return a.Status == bindings.ApprovalPending && !a.Request.ExpiresAt.IsZero() && !now.Before(a.Request.ExpiresAt)
}

// RequestApproval stores a pending approval, or returns the stored one for
// the same (tenant, ID) unchanged. A zero CreatedAt is now; a zero
// ExpiresAt never expires.
func (s *Store) RequestApproval(ctx context.Context, req bindings.ApprovalRequest) (bindings.Approval, error) {
	if err := checkedCall(ctx, bindings.CheckApprovalRequest(req)); err != nil {
		return bindings.Approval{}, err
	}
	s.hitlMu.Lock()
	defer s.hitlMu.Unlock()
	now := s.now()
	k := key{req.TenantID, req.ID}
	if a := s.approvals[k]; a != nil {
		return s.read(a, now), nil
	}
	if req.CreatedAt.IsZero() {
		req.CreatedAt = now
	}
	a := &bindings.Approval{Request: req, Status: bindings.ApprovalPending}
	a.Request.Arguments = cloneJSON(req.Arguments)
	s.approvals[k] = a
	return s.read(a, now), nil
}

// read returns a copy of a as of now, marking a pending approval past its
// expiry expired (for good: it can no longer be decided).
func (s *Store) read(a *bindings.Approval, now time.Time) bindings.Approval {
	expire(a, now)
	return cloneApproval(*a)
}

// expire marks a pending approval past its expiry at now expired, for
// good.
func expire(a *bindings.Approval, now time.Time) {
	if expired(a, now) {
		a.Status = bindings.ApprovalExpired
	}
}

// lockApproval checks a call on the tenant's approval by id (check is one
// more check of the call's input, nil for none), takes hitlMu — a write
// lock: reading may record the expiry — and returns the approval with its
// copy as of now (read) and now. On success the caller holds hitlMu and
// unlocks it; a failed check or an unknown id (then
// *agents.ApprovalNotFoundError) leaves it unlocked.
func (s *Store) lockApproval(ctx context.Context, tenantID, approvalID string, check error) (*bindings.Approval, bindings.Approval, time.Time, error) {
	if err := firstErr(lookupCall(ctx, tenantID, "approval id", approvalID), check); err != nil {
		return nil, bindings.Approval{}, time.Time{}, err
	}
	s.hitlMu.Lock()
	a := s.approvals[key{tenantID, approvalID}]
	if a == nil {
		s.hitlMu.Unlock()
		return nil, bindings.Approval{}, time.Time{}, &agents.ApprovalNotFoundError{ApprovalID: approvalID}
	}
	now := s.now()
	return a, s.read(a, now), now, nil
}

// GetApproval returns an approval in its current state; an unknown id is
// *agents.ApprovalNotFoundError.
func (s *Store) GetApproval(ctx context.Context, tenantID, approvalID string) (bindings.Approval, error) {
	return s.readApproval(ctx, tenantID, approvalID, false)
}

// readApproval returns an approval as of now, a pending one past its
// expiry expired for good; with resolve, such an approval also gets
// ResolvedAt now, once.
func (s *Store) readApproval(ctx context.Context, tenantID, approvalID string, resolve bool) (bindings.Approval, error) {
	a, cur, now, err := s.lockApproval(ctx, tenantID, approvalID, nil)
	if err != nil {
		return bindings.Approval{}, err
	}
	defer s.hitlMu.Unlock()
	if resolve && cur.Status == bindings.ApprovalExpired && a.ResolvedAt == nil {
		at := now // allocated only here: a plain read allocates no time
		a.ResolvedAt = &at
		return cloneApproval(*a), nil
	}
	return cur, nil
}

// ResolveApproval records the first decision on a pending approval; a
// decided approval is returned unchanged, an unknown one is
// *agents.ApprovalNotFoundError, an expired one is
// *agents.HitlRequiredError, and so is a reviewer below the request's role
// when Options.ReviewerRoles is set.
func (s *Store) ResolveApproval(ctx context.Context, tenantID, approvalID string, d bindings.ApprovalDecision) (bindings.Approval, error) {
	a, cur, now, err := s.lockApproval(ctx, tenantID, approvalID, bindings.CheckOptionalID("reviewer", d.Reviewer))
	if err != nil {
		return bindings.Approval{}, err
	}
	defer s.hitlMu.Unlock()
	switch cur.Status {
	case bindings.ApprovalExpired:
		return bindings.Approval{}, &agents.HitlRequiredError{ToolID: a.Request.ToolID, ApprovalID: approvalID, Reason: "approval expired"}
	case bindings.ApprovalApproved, bindings.ApprovalDenied:
		return cur, nil
	}
	if !s.mayReview(a.Request.ReviewerRole, d.ReviewerRoles) {
		return bindings.Approval{}, &agents.HitlRequiredError{ToolID: a.Request.ToolID, ApprovalID: approvalID, Reason: "reviewer lacks role " + a.Request.ReviewerRole}
	}
	a.Status = bindings.ApprovalDenied
	if d.Approved {
		a.Status = bindings.ApprovalApproved
	}
	a.Reviewer = d.Reviewer
	a.Comment = d.Comment
	a.ResolvedAt = &now
	s.tell(bindings.RunChange{TenantID: tenantID, RunID: a.Request.RunID, Claimable: true})
	return cloneApproval(*a), nil
}

// mayReview reports whether roles reach required on the role ladder.
func (s *Store) mayReview(required string, roles []string) bool {
	need, ok := s.roleRank[required]
	if !ok {
		return true
	}
	return slices.ContainsFunc(roles, func(r string) bool {
		rank, ok := s.roleRank[r]
		return ok && rank >= need
	})
}

// ListApprovals returns the approvals asked for by one run, oldest first
// (by CreatedAt, then ID), each in its current state; a run without
// approvals (or of another tenant) has none. It is the same read as
// pgstore's, for the reviewer console and the command line.
func (s *Store) ListApprovals(ctx context.Context, tenantID, runID string) ([]bindings.Approval, error) {
	if err := lookupCall(ctx, tenantID, "run id", runID); err != nil {
		return nil, err
	}
	out := s.readApprovals(tenantID, func(a *bindings.Approval, _ time.Time) bool { return a.Request.RunID == runID })
	slices.SortFunc(out, oldestFirst)
	return out, nil
}

// readApprovals returns the tenant's approvals that keep holds for, in no
// order, each as of now (read); keep sees the stored approval and now.
func (s *Store) readApprovals(tenantID string, keep func(a *bindings.Approval, now time.Time) bool) []bindings.Approval {
	s.hitlMu.Lock()
	defer s.hitlMu.Unlock()
	now := s.now()
	out := []bindings.Approval{}
	for k, a := range s.approvals {
		if k.tenant == tenantID && keep(a, now) {
			out = append(out, s.read(a, now))
		}
	}
	return out
}

// oldestFirst orders approvals by CreatedAt, then ID.
func oldestFirst(a, b bindings.Approval) int {
	if c := a.Request.CreatedAt.Compare(b.Request.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.Request.ID, b.Request.ID)
}

// ListTenantApprovals implements bindings.ApprovalLister.
func (s *Store) ListTenantApprovals(ctx context.Context, in bindings.ListApprovalsInput) ([]bindings.Approval, error) {
	if err := checkedCall(ctx, bindings.CheckID("tenant id", in.TenantID)); err != nil {
		return nil, err
	}
	limit, err := bindings.ApprovalListLimit(in)
	if err != nil {
		return nil, err
	}
	out := s.readApprovals(in.TenantID, func(a *bindings.Approval, now time.Time) bool {
		expire(a, now) // as read does, whether kept or not
		return (a.Status == bindings.ApprovalPending) == in.Pending
	})
	slices.SortFunc(out, func(a, b bindings.Approval) int {
		if !in.Pending { // decided ones newest first
			return oldestFirst(b, a)
		}
		return oldestFirst(a, b)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

var _ bindings.ApprovalLister = (*Store)(nil)
