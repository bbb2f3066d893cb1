package turn

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/drive"
	"github.com/kindgi/agents/turn/internal/routing"
	"github.com/kindgi/agents/turn/internal/sweep"
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
	if err := r.autoClose(ctx, conv, s.Now); err != nil {
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

	tt := r.b.Tools.ForTenant(r.tenantID)
	s.Tools = make([]bindings.ToolDescriptor, 0, len(a.Tools))
	for _, ref := range a.Tools {
		d, err := tt.Resolve(ctx, ref)
		if err != nil {
			if agents.CodeOf(err) == "" {
				return &agents.UnresolvedToolError{ToolID: ref.ID}
			}
			return err
		}
		s.Tools = append(s.Tools, d)
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
	for _, d := range s.Tools {
		if d.Gate != nil && d.Gate.Mode != "" && d.Gate.Mode != agent.GateNeverAsk {
			return &agents.InvalidBindingsError{Reason: "tool " + d.ID + " is gated by its registry (" + string(d.Gate.Mode) + ") and no HITL binding (Bindings.Hitl) is bound to ask for approvals"}
		}
	}
	return nil
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
	if s.Tools != nil {
		tools := s.Tools
		if !own {
			tools = make([]bindings.ToolDescriptor, len(s.Tools))
		}
		for i := range tools {
			d := &tools[i] // built in place: a copy would escape (Config is decoded into it)
			if !own {
				*d = s.Tools[i]
			}
			d.InputSchema = compactJSON(d.InputSchema)
			d.OutputSchema = compactJSON(d.OutputSchema)
			d.Secrets = emptyList(slices.Clone(d.Secrets))
			d.Env = emptyMap(maps.Clone(d.Env))
			d.Annotations = d.Annotations.Clone()
			if d.Gate != nil {
				g := *d.Gate
				d.Gate = &g
			}
			if len(d.Config) == 0 {
				d.Config = nil
			} else {
				b, err := json.Marshal(d.Config)
				if err != nil {
					return setupState{}, &agents.PersistenceError{Op: "encode step " + NodeSetup, Err: err, Permanent: true}
				}
				d.Config = nil
				if err := json.Unmarshal(b, &d.Config); err != nil {
					return setupState{}, &agents.RunJournalUnavailableError{Err: fmt.Errorf("decode step %s: %w", NodeSetup, err)}
				}
			}
		}
		s.Tools = tools
	}
	if s.Guardrails != nil {
		gs := s.Guardrails
		if !own {
			gs = make([]bindings.Guardrail, len(s.Guardrails))
		}
		for i, g := range s.Guardrails {
			g.Config = compactJSON(g.Config)
			gs[i] = g
		}
		s.Guardrails = gs
	}
	s.SubAgents = normalizeAgentTools(s.SubAgents, own)
	s.Handoffs = normalizeAgentTools(s.Handoffs, own)
	p := &s.Policy
	p.AllowProviders = nilIfNullList(p.AllowProviders)
	p.AllowModels = nilIfNullList(p.AllowModels)
	p.DenyProviders = emptyList(p.DenyProviders)
	p.DenyModels = emptyList(p.DenyModels)
	if p.Hitl != nil && p.Hitl.ToolFloors != nil && len(p.Hitl.ToolFloors) == 0 {
		h := *p.Hitl
		h.ToolFloors = nil
		p.Hitl = &h
	}
	s.Hitl.ToolFloors = emptyMap(s.Hitl.ToolFloors)
	if g := s.Hitl.ToolGates; g != nil && g.Overrides != nil && len(g.Overrides) == 0 {
		c := *g
		c.Overrides = nil
		s.Hitl.ToolGates = &c
	}
	return s, nil
}

// compactJSON returns a JSON document as the journal stores it (see
// journaled); an empty one, which the JSON omits, is nil.
func compactJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	return drive.Journaled(raw)
}

// emptyList returns nil for an empty list (which the JSON omits).
func emptyList[E any](v []E) []E {
	if len(v) == 0 {
		return nil
	}
	return v
}

// emptyMap returns nil for an empty map (which the JSON omits).
func emptyMap[K comparable, V any](m map[K]V) map[K]V {
	if len(m) == 0 {
		return nil
	}
	return m
}

// nilIfNullList returns nil for a pointer to a nil list (JSON null).
func nilIfNullList(p *[]string) *[]string {
	if p != nil && *p == nil {
		return nil
	}
	return p
}

// autoClose closes conv when it has been idle longer than the agent's
// autoCloseAfterInactiveSeconds at now — idle since its last message's
// time (LastActivityAt; bindings.InactiveConversationLister) — and returns
// *agents.ConversationClosedError: the turn stores nothing else (no user
// message, no model call). With the conversation binding's
// InactiveConversationLister the close is conditional (a message appended
// meanwhile keeps it open, and the turn goes on); without it,
// CloseConversation closes it. A dry run closes nothing and fails alike.
func (r *run) autoClose(ctx context.Context, conv bindings.Conversation, now time.Time) error {
	cutoff, due := sweep.CloseCutoff(r.in.Agent, now)
	if !due || !conv.LastActivityAt.Before(cutoff) {
		return nil
	}
	closed := &agents.ConversationClosedError{ConversationID: conv.ID}
	if r.in.DryRun {
		return closed
	}
	if l, ok := r.b.Conversations.(bindings.InactiveConversationLister); ok {
		// A write: the run is opened, or its lease taken, first (see
		// openPending).
		if err := r.OpenPending(ctx); err != nil {
			return err
		}
		ok, err := l.CloseIfInactive(ctx, r.tenantID, conv.ID, cutoff)
		if err != nil {
			return coded(err, "close inactive conversation")
		}
		if !ok {
			// Closed by a sweep meanwhile, or active again: read which.
			now, err := r.b.Conversations.GetConversation(ctx, r.tenantID, conv.ID)
			if err != nil {
				return coded(err, "get conversation")
			}
			if now.Status == bindings.ConversationOpen {
				return nil
			}
		}
		return closed
	}
	if err := r.OpenPending(ctx); err != nil {
		return err
	}
	if err := r.b.Conversations.CloseConversation(ctx, r.tenantID, conv.ID); err != nil {
		return coded(err, "close inactive conversation")
	}
	return closed
}
