package bindings

import (
	"context"
	"encoding/json"
	"time"

	agents "github.com/kindgi/agents"
)

// ApprovalStatus is the state of an approval.
type ApprovalStatus string

// Approval states. Expired is reported by GetApproval for a pending approval
// whose ExpiresAt has passed.
const (
	ApprovalPending  ApprovalStatus = "pending"
	ApprovalApproved ApprovalStatus = "approved"
	ApprovalDenied   ApprovalStatus = "denied"
	ApprovalExpired  ApprovalStatus = "expired"
)

// ApprovalRequest asks a person to approve one gated tool call (or a
// session gate, with ToolID empty).
type ApprovalRequest struct {
	TenantID       string          `json:"tenantId"`
	ID             string          `json:"id"`
	RunID          string          `json:"runId"`
	ConversationID string          `json:"conversationId,omitempty"`
	ToolCallID     string          `json:"toolCallId,omitempty"`
	ToolID         string          `json:"toolId,omitempty"`
	ToolVersion    string          `json:"toolVersion,omitempty"`
	Arguments      json.RawMessage `json:"arguments,omitempty"`
	ReviewerRole   string          `json:"reviewerRole"`
	Reason         string          `json:"reason,omitempty"`
	CreatedAt      time.Time       `json:"createdAt"`
	ExpiresAt      time.Time       `json:"expiresAt"`
}

// Approval is a request with its current state.
type Approval struct {
	Request    ApprovalRequest `json:"request"`
	Status     ApprovalStatus  `json:"status"`
	Reviewer   string          `json:"reviewer,omitempty"`
	Comment    string          `json:"comment,omitempty"`
	ResolvedAt *time.Time      `json:"resolvedAt,omitempty"`
}

// ApprovalDecision is a reviewer's answer.
type ApprovalDecision struct {
	Approved bool   `json:"approved"`
	Reviewer string `json:"reviewer"`
	// ReviewerRoles are the reviewer's roles; the binding refuses a decision
	// by a reviewer lacking the request's role when it knows the role ladder.
	ReviewerRoles []string `json:"reviewerRoles,omitempty"`
	Comment       string   `json:"comment,omitempty"`
}

// HitlBinding stores approvals.
//
// RequestApproval is idempotent per (tenant, ID): asking again returns the
// stored approval unchanged. GetApproval or ResolveApproval of an unknown
// id (or of another tenant's approval) is *agents.ApprovalNotFoundError
// (approval-not-found: the id names nothing, which is not a request for
// approval); a pending approval past ExpiresAt reads as ApprovalExpired.
// ResolveApproval decides a pending approval once: the first decision
// wins, deciding again returns the stored approval unchanged, deciding an
// expired one is *agents.HitlRequiredError.
type HitlBinding interface {
	RequestApproval(ctx context.Context, req ApprovalRequest) (Approval, error)
	GetApproval(ctx context.Context, tenantID, approvalID string) (Approval, error)
	ResolveApproval(ctx context.Context, tenantID, approvalID string, d ApprovalDecision) (Approval, error)
}

// ListApprovalsInput selects a tenant's approvals for
// ApprovalLister.ListTenantApprovals.
type ListApprovalsInput struct {
	TenantID string `json:"tenantId"`
	// Pending selects the approvals still awaiting a decision (pending and
	// not past their expiry), oldest first. False selects every other one
	// (approved, denied, expired, or pending past its expiry), newest
	// first.
	Pending bool `json:"pending,omitempty"`
	// Limit is the most approvals returned: 1..1000, 0 is 100.
	Limit int `json:"limit,omitempty"`
}

// ApprovalLister is an optional capability of a HitlBinding: the approvals
// of a tenant, for reviewer tools (the console's approvals page). It lists
// every approval the tenant has, whether or not its run is still parked.
// Approvals are returned as GetApproval returns them (a pending one past
// its expiry reads as expired); another tenant's are never listed.
type ApprovalLister interface {
	ListTenantApprovals(ctx context.Context, in ListApprovalsInput) ([]Approval, error)
}

// ApprovalListLimit returns in.Limit checked: 0 is 100; outside 1..1000
// is invalid-message.
func ApprovalListLimit(in ListApprovalsInput) (int, error) {
	switch {
	case in.Limit == 0:
		return 100, nil
	case in.Limit < 0 || in.Limit > 1000:
		return 0, &agents.InvalidMessageError{Reason: "approval list limit must be 1..1000 (0 is 100)"}
	}
	return in.Limit, nil
}

// CheckApprovalRequest returns an *agents.InvalidMessageError when an
// approval request has an empty tenant or id, an id that breaks the id
// rules (CheckID) or Arguments that are not JSON (CheckJSON), and nil
// otherwise.
func CheckApprovalRequest(req ApprovalRequest) error {
	return firstErr(CheckID("tenant id", req.TenantID), CheckID("approval id", req.ID),
		CheckOptionalID("run id", req.RunID), CheckOptionalID("conversation id", req.ConversationID),
		CheckOptionalID("tool call id", req.ToolCallID), CheckOptionalID("tool id", req.ToolID),
		CheckOptionalID("tool version", req.ToolVersion), CheckOptionalID("reviewer role", req.ReviewerRole),
		CheckJSON("approval arguments", req.Arguments))
}
