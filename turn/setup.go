package turn

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/drive"
	"github.com/kindgi/agents/turn/internal/routing"
	"github.com/kindgi/agents/turn/internal/setupnorm"
	"github.com/kindgi/agents/turn/internal/sweep"
	"github.com/kindgi/agents/turn/internal/toolcall"
)

// setupState is everything the turn decides once, journaled by the setup
// step so that every later drive of the run sees it identically: the time,
// the turn number, the resolved tool versions and guardrails, the merged
// policy and budget, the routed provider and model, and the effective HITL
// policy.
type setupState struct {
	Now          time.Time                 `json:"now"`
	TurnNumber   int                       `json:"turnNumber"`
	Tools        []bindings.ToolDescriptor `json:"tools"`
	Guardrails   []bindings.Guardrail      `json:"guardrails"`
	Policy       Policy                    `json:"policy"`
	Route        ProviderRef               `json:"route"`
	Model        bindings.ModelInfo        `json:"model"`
	Hitl         EffectiveHitlPolicy       `json:"hitl"`
	SessionGate  SessionGateResult         `json:"sessionGate"`
	Budget       budgetCaps                `json:"budget"`
	HistoryLimit int                       `json:"historyLimit"`
	// SubAgents and Handoffs are the agent's sub-agents and handoff
	// targets, resolved (see resolveAgentRefs); omitted when it has none.
	SubAgents []agentTool `json:"subAgents,omitempty"`
	Handoffs  []agentTool `json:"handoffs,omitempty"`
	// Depth is how deep the run's agent nests: 0 for a top-level run, its
	// parent's plus one for a sub-agent's child run (see capChild).
	Depth int `json:"depth,omitempty"`
}

// setup is the setup node: merge the tenant policy (tenant-policy-
// unavailable), resolve every tool (unresolved-tool,
// tool-version-unresolvable), guardrail (unresolved-guardrail), sub-agent
// and handoff (agent-not-found; invalid-bindings without
// Bindings.AgentVersions and Bindings.Agents), route
// the first capability (capability-routing-failed) and check the
// conversation (conversation-not-found, conversation-closed,
// agent-version-mismatch; a conversation idle longer than the agent's
// autoCloseAfterInactiveSeconds is closed, then conversation-closed) and
// the HITL binding (invalid-bindings when a gate could ask and none is
// bound), all before any model call.
func (r *run) setup(ctx context.Context, _ string) (setupState, error) {
	a := &r.in.Agent
	var s setupState
	if err := r.agentSetup(ctx, a, &s); err != nil {
		return s, err
	}

	conv, err := r.conversation(ctx)
	if err != nil {
		return s, err
	}
	if conv.Status == bindings.ConversationClosed {
		return s, &agents.ConversationClosedError{ConversationID: conv.ID}
	}
	if conv.AgentID != a.ID || conv.AgentVersion != a.Version {
		return s, &agents.AgentVersionMismatchError{
			Subject:  "conversation " + conv.ID,
			Expected: conv.AgentID + "@" + conv.AgentVersion,
			Actual:   a.Ref(),
		}
	}
	s.Now = r.now()
	// A conversation idle past the agent's autoCloseAfterInactiveSeconds is
	// closed (its run opened first: a write), and the turn fails.
	if err := sweep.AutoClose(ctx, r.b.Conversations, r.in.Agent, r.tenantID, conv, s.Now, r.in.DryRun, r.OpenPending); err != nil {
		return s, err
	}

	s.TurnNumber = conv.TurnCount + 1
	if err := r.agentHitl(a, &s); err != nil {
		return s, err
	}
	s.SessionGate = EvaluateSessionGate(s.Hitl, s.TurnNumber)
	if r.b.Hitl == nil && s.SessionGate.Required && !r.in.DryRun {
		return s, &agents.InvalidBindingsError{Reason: fmt.Sprintf("turn %d is past the session gate of %d turns and no HITL binding (Bindings.Hitl) is bound to ask for approval", s.TurnNumber, s.SessionGate.AfterTurns)}
	}
	s.Budget = capsFor(*a, s.Policy)
	s.Budget.MaxToolCalls = toolCallsCap(r.b)
	if err := capChild(&s, r.b.child); err != nil {
		return s, err
	}
	s.HistoryLimit = historyLimit(*a)
	return s, nil
}

// agentSetup is the part of setup that agent a decides with the tenant's
// policy, before anything of the conversation is read: the merged policy
// (tenant-policy-unavailable), every tool (unresolved-tool,
// tool-version-unresolvable), guardrail (unresolved-guardrail), sub-agent
// and handoff (agent-not-found, invalid-bindings), and the route
// (capability-routing-failed). A handoff decides the same for its target
// (handOver).
func (r *run) agentSetup(ctx context.Context, a *agent.Agent, s *setupState) error {
	p, err := evaluatePolicy(ctx, r.b, r.tenantID, r.in.ProjectID, a.ID, bindings.PolicyKindModel, bindings.PolicyKindHitl)
	if err != nil {
		return err
	}
	if c := p.MaxCostUsd; c != nil && (math.IsNaN(*c) || math.IsInf(*c, 0) || *c < 0) {
		// Not a cap the turn can apply (nor journal): the policy is broken.
		return &agents.TenantPolicyUnavailableError{PolicyKind: bindings.PolicyKindModel, Err: fmt.Errorf("maxCostUsd %v is not a finite amount of 0 or more", *c)}
	}
	s.Policy = p

	if s.Tools, err = toolcall.Resolve(ctx, r.b.Tools.ForTenant(r.tenantID), a.Tools); err != nil {
		return err
	}

	if s.Guardrails, err = ResolveGuardrails(ctx, r.tenantID, a.Guardrails, r.guardrailsBindings()); err != nil {
		return err
	}
	if s.SubAgents, s.Handoffs, err = r.resolveAgentRefs(ctx, *a); err != nil {
		return err
	}

	provider, model, err := routing.Route(*a, r.b.Providers, p.allow())
	if err != nil {
		return err
	}
	s.Route, s.Model = ProviderRef{Provider: provider, Model: model.ID}, model
	return nil
}

// agentHitl sets the effective HITL policy of agent a under the policy
// agentSetup merged, and checks the HITL binding: a turn whose tools could
// need an approval (by the tenant's floors, the agent's gates or a tool's
// own default gate) with no Bindings.Hitl to ask is invalid-bindings,
// before any model call.
func (r *run) agentHitl(a *agent.Agent, s *setupState) error {
	s.Hitl = ResolveEffectiveHitlPolicy(s.Policy.Hitl, *a)
	if r.b.Hitl != nil {
		return nil
	}
	// The tenant's floors may gate a tool the agent does not: still
	// before any model call, a turn that could need an approval and
	// has no binding to ask one is invalid-bindings.
	if err := gatedWithoutHitl(s.Hitl, a.Tools); err != nil {
		return err
	}
	// So may a tool's own default gate (ToolDescriptor.Gate, e.g. an
	// MCP tool's destructiveHint): it is a floor like the tenant's.
	return toolcall.Ungated(s.Tools)
}

// normalizeSetup returns s as decoding raw — its journaled JSON — would
// (decodeResult), without decoding it: a drive that ran setup works from
// the same values as every later drive that replays it. Tool configs (any
// JSON) go through JSON, so a tool sees float64 numbers and map[string]any
// objects on every drive; JSON documents are compacted as the journal
// stores them; empty lists and maps the JSON omits become nil; the maps a
// step hands out (tool env and config) are the drive's own. A raw with an
// escaped U+FFFD (the encoder's replacement of invalid UTF-8 in a string)
// is decoded instead. TestNormalizeSetupIsDecode holds it to decodeResult.
func normalizeSetup(s setupState, raw []byte) (setupState, error) {
	return normalizeSetupIn(s, raw, false)
}

// normalizeSetupOwn is normalizeSetup of a setup state built in this
// drive, which nothing else holds: its tool and guardrail lists are
// normalized in place instead of copied.
func normalizeSetupOwn(s setupState, raw []byte) (setupState, error) {
	return normalizeSetupIn(s, raw, true)
}

// normalizeSetupIn is normalizeSetup, in place when own is set (see
// normalizeSetupOwn).
func normalizeSetupIn(s setupState, raw []byte, own bool) (setupState, error) {
	if bytes.Contains(raw, []byte(`\ufffd`)) {
		return drive.DecodeResult[setupState](&bindings.JournalEntry{Key: NodeSetup, Status: bindings.StepCompleted, Output: raw})
	}
	var err error
	if s.Tools, err = setupnorm.Tools(s.Tools, own, NodeSetup); err != nil {
		return setupState{}, err
	}
	s.Guardrails = setupnorm.Guardrails(s.Guardrails, own)
	s.SubAgents = normalizeAgentTools(s.SubAgents, own)
	s.Handoffs = normalizeAgentTools(s.Handoffs, own)
	p := &s.Policy
	p.AllowProviders = setupnorm.NullList(p.AllowProviders)
	p.AllowModels = setupnorm.NullList(p.AllowModels)
	p.DenyProviders = setupnorm.List(p.DenyProviders)
	p.DenyModels = setupnorm.List(p.DenyModels)
	p.Hitl = setupnorm.Hitl(p.Hitl)
	s.Hitl.ToolFloors = setupnorm.Map(s.Hitl.ToolFloors)
	s.Hitl.ToolGates = setupnorm.Gates(s.Hitl.ToolGates)
	return s, nil
}

// compactJSON returns a JSON document as the journal stores it; an empty
// one, which the JSON omits, is nil (setupnorm.JSON).
func compactJSON(raw json.RawMessage) json.RawMessage { return setupnorm.JSON(raw) }
