package bindings

import (
	"context"

	"github.com/kindgi/agents/agent"
)

// Policy kinds a PolicyRegistry evaluates; TenantPolicyUnavailableError
// carries the kind that failed.
const (
	PolicyKindModel = "model"
	PolicyKindHitl  = "hitl"
	// PolicyKindQuota asks for a tenant's quotas (TenantPolicy.Quotas):
	// the turn evaluates it at the start of every drive, when
	// turn.Bindings.Quotas is set.
	PolicyKindQuota = "quota"
)

// TenantPolicy constrains what a tenant's turns may use. Empty allow lists
// allow everything; deny lists win over allow lists. Nil caps are no caps.
type TenantPolicy struct {
	AllowProviders []string `json:"allowProviders,omitempty"`
	DenyProviders  []string `json:"denyProviders,omitempty"`
	// AllowModels and DenyModels hold model ids or "provider/model".
	AllowModels []string  `json:"allowModels,omitempty"`
	DenyModels  []string  `json:"denyModels,omitempty"`
	MaxCostUsd  *float64  `json:"maxCostUsd,omitempty"`
	MaxSteps    *int      `json:"maxSteps,omitempty"`
	MaxWallMs   *int64    `json:"maxWallMs,omitempty"`
	Hitl        *HitlSpec `json:"hitl,omitempty"`
	// Quotas bound the tenant's use across turns, workers and time (see
	// Quota and turn.Bindings.Quotas); CheckQuotas validates them.
	Quotas []Quota `json:"quotas,omitempty"`
}

// HitlSpec is a tenant's HITL policy. It can only tighten the agent's: it
// caps the timeout, raises the reviewer role and sets per-tool gate floors.
type HitlSpec struct {
	MaxTimeoutMs *int64 `json:"maxTimeoutMs,omitempty"`
	// MinReviewerRole raises every approval's reviewer role to at least this
	// role on the role ladder.
	MinReviewerRole string `json:"minReviewerRole,omitempty"`
	// ToolFloors are per-tool minimum gates; "*" applies to every tool.
	ToolFloors map[string]agent.ToolGate `json:"toolFloors,omitempty"`
	// OnTimeout sets the action when an approval times out (escalate, deny
	// or fail); turn.ResolveEffectiveHitlPolicy says how it combines with
	// the agent's.
	OnTimeout string `json:"onTimeout,omitempty"`
	// AfterTurns caps the session gate: ask no later than this turn.
	AfterTurns *int `json:"afterTurns,omitempty"`
}

// PolicyRequest asks for one kind of a tenant's policy.
type PolicyRequest struct {
	TenantID  string `json:"tenantId"`
	ProjectID string `json:"projectId,omitempty"`
	AgentID   string `json:"agentId,omitempty"`
	Kind      string `json:"kind"`
}

// PolicyRegistry evaluates tenant policies. An error means the policy could
// not be evaluated; the turn then fails with tenant-policy-unavailable
// rather than run without it. A tenant with no policy of the kind gets a
// zero TenantPolicy and nil.
type PolicyRegistry interface {
	Evaluate(ctx context.Context, req PolicyRequest) (TenantPolicy, error)
}

// Principal is who a turn acts for.
type Principal struct {
	ID    string   `json:"id"`
	Roles []string `json:"roles,omitempty"`
}

// AuthzRequest asks whether a principal may invoke a tool version.
type AuthzRequest struct {
	TenantID    string    `json:"tenantId"`
	Principal   Principal `json:"principal"`
	ToolID      string    `json:"toolId"`
	ToolVersion string    `json:"toolVersion"`
	// Input is the call's arguments.
	Input []byte `json:"input,omitempty"`
}

// AuthzDecision is an Authorizer's answer.
type AuthzDecision struct {
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason,omitempty"`
}

// Authorizer decides tool calls. An error means no decision; the call is
// not made.
type Authorizer interface {
	Authorize(ctx context.Context, req AuthzRequest) (AuthzDecision, error)
}

// SecretResolver resolves a named secret for a tenant.
type SecretResolver interface {
	ResolveSecret(ctx context.Context, tenantID, name string) (string, error)
}
