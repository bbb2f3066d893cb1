package turn

import (
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/tighten"
)

// HITL defaults: a reviewer has 24 hours, the standard role reviews, and an
// approval that times out is escalated.
const (
	DefaultHitlTimeoutMs = int64(24 * 60 * 60 * 1000)
	DefaultReviewerRole  = RoleStandard
	DefaultOnTimeout     = OnTimeoutEscalate
)

// Reviewer roles, from least to most senior: "standard", "senior",
// "admin". A role not on this ladder ranks above every role on it (a
// custom role is taken to be stricter).
const (
	RoleStandard = "standard"
	RoleSenior   = "senior"
	RoleAdmin    = "admin"
)

// Actions when an approval times out, from least to most strict.
const (
	// OnTimeoutEscalate ("escalate") asks again, one reviewer role up the
	// ladder.
	OnTimeoutEscalate = "escalate"
	// OnTimeoutDeny ("deny") treats the call as denied: the model is told.
	OnTimeoutDeny = "deny"
	// OnTimeoutFail ("fail") fails the turn with hitl-required.
	OnTimeoutFail = "fail"
)

// EffectiveHitlPolicy is the HITL policy a turn applies: framework
// defaults, overlaid with the agent's policy, held to the tenant's.
type EffectiveHitlPolicy struct {
	TimeoutMs    int64  `json:"timeoutMs"`
	ReviewerRole string `json:"reviewerRole"`
	OnTimeout    string `json:"onTimeout"`
	// AfterTurns is the session gate (nil: none): a turn numbered above it
	// needs an approval before it runs.
	AfterTurns *int `json:"afterTurns,omitempty"`
	// ToolGates are the agent's per-tool gates (nil when the agent sets no
	// hitl.tools: then only ToolFloors gate tools).
	ToolGates *agent.ToolGates `json:"toolGates,omitempty"`
	// ToolFloors are the tenant's minimum gates by tool id ("*": every
	// tool).
	ToolFloors map[string]agent.ToolGate `json:"toolFloors,omitempty"`
}

// ResolveEffectiveHitlPolicy returns the HITL policy of a turn of a:
// framework defaults (24 h timeout, reviewer role standard, escalate on
// timeout), overlaid with the agent's conversation policy, then held to the
// tenant's spec, which can only tighten: it caps the timeout, raises the
// reviewer role on the ladder standard < senior < admin, moves the session
// gate earlier, sets the on-timeout action (escalate < deny < fail: only a
// stricter one replaces the default) and sets tool floors, so that per tool
// the gate is the stricter of the agent's and the tenant's.
func ResolveEffectiveHitlPolicy(tenant *bindings.HitlSpec, a agent.Agent) EffectiveHitlPolicy {
	return EffectiveHitlPolicy(tighten.ResolveHitl(tenant, a, DefaultHitlTimeoutMs, DefaultReviewerRole, DefaultOnTimeout))
}

// Gate returns the gate of a tool: the agent's (its override, else its
// default, else never_ask; never_ask when the agent sets no tool gates),
// raised to the tenant's floors for the tool and for "*".
func (p EffectiveHitlPolicy) Gate(toolID string) agent.ToolGate {
	return tighten.Gate(p.ToolGates, p.ToolFloors, toolID)
}

// reviewerFor returns the reviewer role of a gated call: the policy's,
// raised to the gate's required role.
func (p EffectiveHitlPolicy) reviewerFor(g agent.ToolGate) string {
	return tighten.Reviewer(p.ReviewerRole, g.RequiredRole)
}

// SessionGateResult is the session gate's decision for one turn.
type SessionGateResult struct {
	// Required reports that the turn needs an approval before it runs.
	Required   bool   `json:"required"`
	AfterTurns int    `json:"afterTurns,omitempty"`
	TurnNumber int    `json:"turnNumber"`
	Reason     string `json:"reason,omitempty"`
}

// EvaluateSessionGate decides the session gate (hitl.afterTurns,
// hitlAfterTurns, and the tenant's cap) for turn number turn (1-based): a
// turn numbered above the gate needs a reviewer's approval before it runs.
//
// The gate asks at every turn past N, not once per conversation: an
// approval of turn N+1 lets that turn run, and turn N+2 asks again. The
// reasons: the TypeScript package's evaluateSessionGate is this same pure
// function of the policy and the turn number, with no approval history
// as input, so agents shared with the TypeScript runtime gate the same
// turns in both; an approval is of one run (its request names the run and
// the turn a reviewer looked at, and the expiry sweep moves it by its run),
// and nothing a reviewer saw covers the turns that come after; and a
// tenant's afterTurns cap can only tighten, which it would not if one
// approval opened the rest of a conversation. An agent that wants a
// single check-in raises afterTurns instead, or gates tools.
func EvaluateSessionGate(p EffectiveHitlPolicy, turn int) SessionGateResult {
	r := SessionGateResult{TurnNumber: turn}
	if p.AfterTurns == nil {
		return r
	}
	r.AfterTurns = *p.AfterTurns
	if turn > *p.AfterTurns {
		r.Required = true
		r.Reason = "the conversation has run past the session gate"
	}
	return r
}
