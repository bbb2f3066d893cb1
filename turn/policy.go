package turn

import (
	"context"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/routing"
	"github.com/kindgi/agents/turn/internal/tighten"
)

// Policy is a merged tenant policy: at least as strict as every policy it
// was merged from. Unlike bindings.TenantPolicy it can say "allow nothing":
// a nil allow list allows everything, an empty non-nil one nothing.
type Policy struct {
	AllowProviders *[]string          `json:"allowProviders,omitempty"`
	DenyProviders  []string           `json:"denyProviders,omitempty"`
	AllowModels    *[]string          `json:"allowModels,omitempty"`
	DenyModels     []string           `json:"denyModels,omitempty"`
	MaxCostUsd     *float64           `json:"maxCostUsd,omitempty"`
	MaxSteps       *int               `json:"maxSteps,omitempty"`
	MaxWallMs      *int64             `json:"maxWallMs,omitempty"`
	Hitl           *bindings.HitlSpec `json:"hitl,omitempty"`
}

// MergePolicies merges tenant policies so the result is at least as strict
// as each: allow lists intersect, deny lists union, the smaller cap wins,
// and HITL specs merge the same way (the shorter timeout, the higher
// reviewer role, the stricter tool floor, the earlier session gate, the
// stricter on-timeout action). Nil policies are skipped.
func MergePolicies(ps ...*bindings.TenantPolicy) Policy {
	var out Policy
	for _, p := range ps {
		if p == nil {
			continue
		}
		out.AllowProviders = tighten.Intersect(out.AllowProviders, p.AllowProviders)
		out.AllowModels = tighten.Intersect(out.AllowModels, p.AllowModels)
		out.DenyProviders = tighten.Union(out.DenyProviders, p.DenyProviders)
		out.DenyModels = tighten.Union(out.DenyModels, p.DenyModels)
		out.MaxCostUsd = tighten.MinPtr(out.MaxCostUsd, p.MaxCostUsd)
		out.MaxSteps = tighten.MinPtr(out.MaxSteps, p.MaxSteps)
		out.MaxWallMs = tighten.MinPtr(out.MaxWallMs, p.MaxWallMs)
		out.Hitl = tighten.MergeHitlSpecs(out.Hitl, p.Hitl)
	}
	return out
}

// allow is what p allows of providers and models, for routing.
func (p Policy) allow() routing.Allow {
	return routing.Allow{
		AllowProviders: p.AllowProviders, DenyProviders: p.DenyProviders,
		AllowModels: p.AllowModels, DenyModels: p.DenyModels,
	}
}

// evaluatePolicy merges the static tenant policy with what the policy
// registry evaluates for the model and hitl kinds. An evaluation error is
// *agents.TenantPolicyUnavailableError naming the kind.
func evaluatePolicy(ctx context.Context, b *Bindings, tenantID, projectID, agentID string, kinds ...string) (Policy, error) {
	ps := []*bindings.TenantPolicy{b.TenantPolicy}
	if b.PolicyRegistry != nil {
		for _, kind := range kinds {
			tp, err := b.PolicyRegistry.Evaluate(ctx, bindings.PolicyRequest{
				TenantID: tenantID, ProjectID: projectID, AgentID: agentID, Kind: kind,
			})
			if err != nil {
				return Policy{}, &agents.TenantPolicyUnavailableError{PolicyKind: kind, Err: err}
			}
			ps = append(ps, &tp)
		}
	}
	return MergePolicies(ps...), nil
}

// budgetCaps are a turn's effective budget: the agent's, capped by the
// merged tenant policy.
type budgetCaps struct {
	MaxSteps   int      `json:"maxSteps"`
	MaxCostUsd *float64 `json:"maxCostUsd,omitempty"`
	MaxWallMs  int64    `json:"maxWallMs"`
	// MaxToolCalls is Bindings.MaxToolCallsPerResponse as setup saw it (0
	// in runs journaled before it existed: the binding's value then).
	MaxToolCalls int `json:"maxToolCalls,omitempty"`
}

// capsFor is agent a's budget capped by the merged tenant policy p.
func capsFor(a agent.Agent, p Policy) budgetCaps {
	steps, wall, cost := tighten.Budget(&a, p.MaxSteps, p.MaxWallMs, p.MaxCostUsd)
	return budgetCaps{MaxSteps: steps, MaxCostUsd: cost, MaxWallMs: wall}
}
