package bindings

import (
	"context"
	"encoding/json"
	"time"
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
