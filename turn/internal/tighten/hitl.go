package tighten

import (
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
)

// Hitl is the HITL policy a turn applies, field for field turn's
// EffectiveHitlPolicy (which converts from it).
type Hitl struct {
	TimeoutMs    int64
	ReviewerRole string
	OnTimeout    string
	AfterTurns   *int
	ToolGates    *agent.ToolGates
	ToolFloors   map[string]agent.ToolGate
}

// ResolveHitl is turn.ResolveEffectiveHitlPolicy: the defaults
// (timeoutMs, role, onTimeout), overlaid with agent a's conversation
// policy, then held to the tenant's spec, which can only tighten (a
// shorter timeout, a higher reviewer role, an earlier session gate, a
// stricter on-timeout action, tool floors).
func ResolveHitl(tenant *bindings.HitlSpec, a agent.Agent, timeoutMs int64, role, onTimeout string) Hitl {
	p := Hitl{TimeoutMs: timeoutMs, ReviewerRole: role, OnTimeout: onTimeout}
	if cp := a.ConversationPolicy; cp != nil {
		p.AfterTurns = MinPtr(p.AfterTurns, cp.HitlAfterTurns)
		if h := cp.Hitl; h != nil {
			p.AfterTurns = MinPtr(p.AfterTurns, h.AfterTurns)
			if h.TimeoutMs != nil && *h.TimeoutMs > 0 {
				p.TimeoutMs = *h.TimeoutMs
			}
			if h.DefaultReviewerRole != "" {
				p.ReviewerRole = h.DefaultReviewerRole
			}
			if h.Tools != nil {
				g := &agent.ToolGates{}
				if h.Tools.Default != nil {
					d := *h.Tools.Default
					g.Default = &d
				}
				if len(h.Tools.Overrides) > 0 {
					g.Overrides = make(map[string]agent.ToolGate, len(h.Tools.Overrides))
					for k, v := range h.Tools.Overrides {
						g.Overrides[k] = v
					}
				}
				p.ToolGates = g
			}
		}
	}
	if tenant == nil {
		return p
	}
	if tenant.MaxTimeoutMs != nil && *tenant.MaxTimeoutMs > 0 && *tenant.MaxTimeoutMs < p.TimeoutMs {
		p.TimeoutMs = *tenant.MaxTimeoutMs
	}
	p.ReviewerRole = Reviewer(p.ReviewerRole, tenant.MinReviewerRole)
	if OnTimeoutRank(tenant.OnTimeout) > OnTimeoutRank(p.OnTimeout) {
		p.OnTimeout = tenant.OnTimeout
	}
	if tenant.AfterTurns != nil && *tenant.AfterTurns > 0 {
		p.AfterTurns = MinPtr(p.AfterTurns, tenant.AfterTurns)
	}
	if len(tenant.ToolFloors) > 0 {
		p.ToolFloors = make(map[string]agent.ToolGate, len(tenant.ToolFloors))
		for k, v := range tenant.ToolFloors {
			if v.Mode.Strictness() >= 0 {
				p.ToolFloors[k] = v
			}
		}
	}
	return p
}

// Reviewer returns role raised to min (a gate's required role, a
// tenant's minimum role): min when it ranks strictly higher, role
// otherwise.
func Reviewer(role, min string) string {
	if min != "" && RoleRank(min) > RoleRank(role) {
		return min
	}
	return role
}
