package turn

import (
	"context"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
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
}

// setup is the setup node: merge the tenant policy (tenant-policy-
// unavailable), resolve every tool (unresolved-tool,
// tool-version-unresolvable) and guardrail (unresolved-guardrail), route
// the first capability (capability-routing-failed) and check the
// conversation (conversation-not-found, conversation-closed,
// agent-version-mismatch), all before any model call.
func (r *run) setup(ctx context.Context, _ string) (setupState, error) {
	a := r.agent
	var s setupState
	p, err := evaluatePolicy(ctx, r.b, r.tenantID, r.in.ProjectID, a.ID, bindings.PolicyKindModel, bindings.PolicyKindHitl)
	if err != nil {
		return s, err
	}
	s.Policy = p

	tt := r.b.Tools.ForTenant(r.tenantID)
	s.Tools = make([]bindings.ToolDescriptor, 0, len(a.Tools))
	for _, ref := range a.Tools {
		d, err := tt.Resolve(ctx, ref)
		if err != nil {
			if agents.CodeOf(err) == "" {
				return s, &agents.UnresolvedToolError{ToolID: ref.ID}
			}
			return s, err
		}
		s.Tools = append(s.Tools, d)
	}

	s.Guardrails = make([]bindings.Guardrail, 0, len(a.Guardrails))
	for _, id := range a.Guardrails {
		if r.b.Guardrails == nil {
			return s, &agents.UnresolvedGuardrailError{GuardrailID: id, Reason: "no guardrail registry is bound"}
		}
		g, err := r.b.Guardrails.Guardrail(ctx, r.tenantID, id)
		if err != nil {
			if agents.CodeOf(err) == "" {
				return s, &agents.UnresolvedGuardrailError{GuardrailID: id, Reason: err.Error()}
			}
			return s, err
		}
		if r.b.Checks == nil {
			return s, &agents.UnresolvedGuardrailError{GuardrailID: id, Reason: "no check registry is bound"}
		}
		if _, ok := r.b.Checks.Check(g.CheckID); !ok {
			return s, &agents.UnresolvedGuardrailError{GuardrailID: id, Reason: "check " + g.CheckID + " is not registered"}
		}
		s.Guardrails = append(s.Guardrails, g)
	}

	ref, model, err := route(a, r.b.Providers, p)
	if err != nil {
		return s, err
	}
	s.Route, s.Model = ref, model

	conv, err := r.b.Conversations.GetConversation(ctx, r.tenantID, r.in.ConversationID)
	if err != nil {
		return s, coded(err, "get conversation")
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
	s.TurnNumber = conv.TurnCount + 1
	s.Hitl = ResolveEffectiveHitlPolicy(p.Hitl, a)
	s.SessionGate = EvaluateSessionGate(s.Hitl, s.TurnNumber)
	s.Budget = capsFor(a, p)
	s.HistoryLimit = DefaultHistoryLimit
	if cp := a.ConversationPolicy; cp != nil && cp.HistoryLimit != nil {
		s.HistoryLimit = *cp.HistoryLimit
	}
	return s, nil
}
