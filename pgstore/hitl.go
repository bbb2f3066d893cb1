package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

const approvalCols = `tenant_id, id, run_id, conversation_id, tool_call_id, tool_id, tool_version, arguments,
	reviewer_role, reason, created_at, expires_at, status, reviewer, comment, resolved_at`

const sqlRequestApproval = `INSERT INTO agent_approvals
	(tenant_id, id, run_id, conversation_id, tool_call_id, tool_id, tool_version, arguments, reviewer_role, reason, created_at, expires_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
	ON CONFLICT (tenant_id, id) DO NOTHING`

const sqlGetApproval = `SELECT ` + approvalCols + ` FROM agent_approvals WHERE tenant_id = $1 AND id = $2`

// sqlResolveApproval decides a pending, unexpired approval. Concurrent
// deciders queue on the row lock and re-check status = 'pending' against
// the winner's row, so the first decision is the only one stored.
const sqlResolveApproval = `UPDATE agent_approvals
	SET status = $3, reviewer = $4, comment = $5, resolved_at = $6
	WHERE tenant_id = $1 AND id = $2 AND status = 'pending' AND (expires_at IS NULL OR expires_at >= $6)`

const sqlListApprovals = `SELECT ` + approvalCols + ` FROM agent_approvals
	WHERE tenant_id = $1 AND run_id = $2 ORDER BY created_at, id`

// RequestApproval implements bindings.HitlBinding: the first request of an
// id is stored; asking again returns the stored approval unchanged.
func (s *Store) RequestApproval(ctx context.Context, req bindings.ApprovalRequest) (bindings.Approval, error) {
	if err := bindings.CheckApprovalRequest(req); err != nil {
		return bindings.Approval{}, err
	}
	args, err := wrapOptChecked("approval arguments", req.Arguments, true) // checked above
	if err != nil {
		return bindings.Approval{}, err
	}
	var expires *time.Time
	if !req.ExpiresAt.IsZero() {
		t := req.ExpiresAt.UTC().Truncate(time.Microsecond)
		expires = &t
	}
	ap, found, err := writeThenRead(ctx, s, "request approval", req.TenantID, scanApproval,
		&stmt{sqlRequestApproval, []any{req.TenantID, req.ID, req.RunID, req.ConversationID, req.ToolCallID, req.ToolID,
			req.ToolVersion, jsonArg(args), req.ReviewerRole, encodeText(req.Reason), s.stamp(req.CreatedAt), expires}},
		stmt{sqlGetApproval, []any{req.TenantID, req.ID}})
	if err != nil {
		return bindings.Approval{}, err
	}
	if !found {
		return bindings.Approval{}, &agents.PersistenceError{Op: "request approval", Err: pgx.ErrNoRows}
	}
	return s.withExpiry(ap), nil
}

// GetApproval implements bindings.HitlBinding.
func (s *Store) GetApproval(ctx context.Context, tenantID, approvalID string) (bindings.Approval, error) {
	return s.approvalAfter(ctx, "get approval", tenantID, approvalID, nil)
}

// approvalAfter reads an approval, after the write w when it is not nil,
// as GetApproval reports it: its ids checked, its expiry applied, and
// ApprovalNotFoundError when there is none.
func (s *Store) approvalAfter(ctx context.Context, op, tenantID, approvalID string, w *stmt) (bindings.Approval, error) {
	ap, err := getByID(ctx, s, op, tenantID, "approval id", approvalID, w, sqlGetApproval, scanApproval,
		func() error { return &agents.ApprovalNotFoundError{ApprovalID: approvalID} })
	if err != nil {
		return bindings.Approval{}, err
	}
	return s.withExpiry(ap), nil
}

// ResolveApproval implements bindings.HitlBinding with a conditional
// UPDATE: the first decision wins, a later one returns the stored approval.
// The binding knows no role ladder, so it does not check ReviewerRoles.
func (s *Store) ResolveApproval(ctx context.Context, tenantID, approvalID string, d bindings.ApprovalDecision) (bindings.Approval, error) {
	if err := firstErr(bindings.CheckLookup(tenantID, "approval id", approvalID), bindings.CheckOptionalID("reviewer", d.Reviewer)); err != nil {
		return bindings.Approval{}, err
	}
	status := bindings.ApprovalDenied
	if d.Approved {
		status = bindings.ApprovalApproved
	}
	now := s.stamp(time.Time{})
	ap, err := s.approvalAfter(ctx, "resolve approval", tenantID, approvalID,
		&stmt{sqlResolveApproval, []any{tenantID, approvalID, string(status), d.Reviewer, encodeText(d.Comment), now}})
	if err != nil {
		return bindings.Approval{}, err
	}
	if ap.Status == bindings.ApprovalExpired {
		return bindings.Approval{}, &agents.HitlRequiredError{ToolID: ap.Request.ToolID, ApprovalID: approvalID, Reason: "approval expired"}
	}
	return ap, nil
}

// ListApprovals returns the approvals asked for by one run, oldest first,
// with pending ones past their expiry reported as expired: what a reviewer
// tool shows for a parked run. It is not part of bindings.HitlBinding.
func (s *Store) ListApprovals(ctx context.Context, tenantID, runID string) ([]bindings.Approval, error) {
	if err := bindings.CheckLookup(tenantID, "run id", runID); err != nil {
		return nil, err
	}
	return s.queryApprovals(ctx, "list approvals", tenantID, sqlListApprovals, tenantID, runID)
}

// queryApprovals runs one approvals query as tenantID and returns its rows
// as GetApproval would (expiry applied), never nil.
func (s *Store) queryApprovals(ctx context.Context, op, tenantID, sql string, args ...any) ([]bindings.Approval, error) {
	list, err := writeThenReadAll(ctx, s, op, tenantID, scanApproval, nil, stmt{sql, args})
	if err != nil {
		return nil, err
	}
	for i := range list {
		list[i] = s.withExpiry(list[i])
	}
	return list, nil
}

// withExpiry reports a pending approval past its ExpiresAt as expired.
func (s *Store) withExpiry(ap bindings.Approval) bindings.Approval {
	if ap.Status == bindings.ApprovalPending && !ap.Request.ExpiresAt.IsZero() && s.now().After(ap.Request.ExpiresAt) {
		ap.Status = bindings.ApprovalExpired
	}
	return ap
}

func scanApproval(row pgx.CollectableRow) (bindings.Approval, error) {
	var ap bindings.Approval
	r := &ap.Request
	var args []byte
	var expires *time.Time
	var status string
	err := row.Scan(&r.TenantID, &r.ID, &r.RunID, &r.ConversationID, &r.ToolCallID, &r.ToolID, &r.ToolVersion, &args,
		&r.ReviewerRole, &r.Reason, &r.CreatedAt, &expires, &status, &ap.Reviewer, &ap.Comment, &ap.ResolvedAt)
	if err != nil {
		return ap, err
	}
	ap.Status = bindings.ApprovalStatus(status)
	r.Reason, ap.Comment = decodeText(r.Reason), decodeText(ap.Comment)
	r.CreatedAt = utc(r.CreatedAt)
	if expires != nil {
		r.ExpiresAt = expires.UTC()
	}
	if ap.ResolvedAt != nil {
		t := ap.ResolvedAt.UTC()
		ap.ResolvedAt = &t
	}
	r.Arguments, err = unwrapOpt(args)
	return ap, err
}

var _ bindings.ApprovalLister = (*Store)(nil)

// sqlListTenantApprovals lists the approvals awaiting a decision (pending,
// not past expiry at $2), oldest first; sqlListTenantDecided every other,
// newest first.
const (
	sqlListTenantApprovals = `SELECT ` + approvalCols + ` FROM agent_approvals
	WHERE tenant_id = $1 AND status = 'pending' AND (expires_at IS NULL OR expires_at >= $2)
	ORDER BY created_at, id LIMIT $3`
	sqlListTenantDecided = `SELECT ` + approvalCols + ` FROM agent_approvals
	WHERE tenant_id = $1 AND (status <> 'pending' OR expires_at < $2)
	ORDER BY created_at DESC, id DESC LIMIT $3`
)

// ListTenantApprovals implements bindings.ApprovalLister.
func (s *Store) ListTenantApprovals(ctx context.Context, in bindings.ListApprovalsInput) ([]bindings.Approval, error) {
	if err := bindings.CheckID("tenant id", in.TenantID); err != nil {
		return nil, err
	}
	limit, err := bindings.ApprovalListLimit(in)
	if err != nil {
		return nil, err
	}
	q := sqlListTenantDecided
	if in.Pending {
		q = sqlListTenantApprovals
	}
	return s.queryApprovals(ctx, "list tenant approvals", in.TenantID, q, in.TenantID, s.now(), limit)
}
