package turn

import (
	"context"
	"strconv"
	"sync"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/routing"
)

// The guardrail gate as steps usable on their own (the TypeScript
// package's resolveGuardrails, buildRunTrace, evaluateGate and
// categorizeOutcomes with GuardrailsBindings). The turn's setup and
// evaluate-guardrails nodes call these same functions.

// GuardrailsBindings are what the guardrail steps run on (the TypeScript
// package's GuardrailsBindings: guardrails, checks, compliance), plus the
// provider registry EvaluateGate routes llm-judge checks on.
type GuardrailsBindings struct {
	Guardrails bindings.GuardrailRegistry
	Checks     bindings.CheckRegistry
	// Compliance, when set, receives one record per evaluation (see
	// RecordCompliance).
	Compliance bindings.ComplianceRecorder
	// Providers is where an llm-judge check's questions go (see
	// GateInput.Route); needed only by llm-judge guardrails.
	Providers bindings.ProviderRegistry
}

// ResolveGuardrails resolves an agent's guardrail ids for a tenant, in
// order, and checks that each one's check is registered: an unknown id, a
// missing registry or an unregistered check is
// *agents.UnresolvedGuardrailError (a registry failure keeps its code).
func ResolveGuardrails(ctx context.Context, tenantID string, ids []string, b GuardrailsBindings) ([]bindings.Guardrail, error) {
	out := make([]bindings.Guardrail, 0, len(ids))
	for _, id := range ids {
		if b.Guardrails == nil {
			return nil, &agents.UnresolvedGuardrailError{GuardrailID: id, Reason: "no guardrail registry is bound"}
		}
		g, err := b.Guardrails.Guardrail(ctx, tenantID, id)
		if err != nil {
			if agents.CodeOf(err) == "" {
				return nil, &agents.UnresolvedGuardrailError{GuardrailID: id, Reason: err.Error()}
			}
			return nil, err
		}
		if b.Checks == nil {
			return nil, &agents.UnresolvedGuardrailError{GuardrailID: id, Reason: "no check registry is bound"}
		}
		if _, ok := b.Checks.Check(g.CheckID); !ok {
			return nil, &agents.UnresolvedGuardrailError{GuardrailID: id, Reason: "check " + g.CheckID + " is not registered"}
		}
		out = append(out, g)
	}
	return out, nil
}

// RunTraceInput is what BuildRunTrace makes a trace of: a turn's identity,
// the messages sent to the model, the tool calls with their results, and
// the final response.
type RunTraceInput struct {
	RunID          string
	TenantID       string
	AgentID        string
	AgentVersion   string
	ConversationID string
	Messages       []bindings.ChatMessage
	ToolCalls      []bindings.TraceToolCall
	Response       string
}

// BuildRunTrace builds what a guardrail check sees of a turn. It shares
// no memory with in.
func BuildRunTrace(in RunTraceInput) bindings.RunTrace {
	t := bindings.RunTrace{
		RunID: in.RunID, TenantID: in.TenantID, AgentID: in.AgentID, AgentVersion: in.AgentVersion,
		ConversationID: in.ConversationID,
		Messages:       make([]bindings.TraceMessage, len(in.Messages)),
		ToolCalls:      append([]bindings.TraceToolCall{}, in.ToolCalls...),
		Response:       bindings.TraceResponse{Content: in.Response},
	}
	for i, m := range in.Messages {
		t.Messages[i] = bindings.TraceMessage{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
	}
	return t
}

// GuardrailOutcome is one guardrail's verdict on a final response, as
// EvaluateGate returns it and the turn journals it.
type GuardrailOutcome struct {
	ID            string         `json:"id"`
	CheckID       string         `json:"checkId,omitempty"`
	Kind          string         `json:"kind"`
	Action        string         `json:"action"`
	Passed        bool           `json:"passed"`
	Reason        string         `json:"reason,omitempty"`
	JudgeResponse string         `json:"judgeResponse,omitempty"`
	Usage         bindings.Usage `json:"usage"`
	// EvaluatedAt is when the check gave its verdict (zero unless
	// GateInput.Now is set).
	EvaluatedAt time.Time `json:"evaluatedAt,omitzero"`
}

// guardrailOutcome is the journaled name of GuardrailOutcome.
type guardrailOutcome = GuardrailOutcome

// GateInput is what EvaluateGate checks.
type GateInput struct {
	// Guardrails are the resolved guardrails (ResolveGuardrails), checked
	// in order.
	Guardrails []bindings.Guardrail
	// Trace is the turn the checks see (BuildRunTrace).
	Trace bindings.RunTrace
	// Policy is the turn's merged tenant policy (MergePolicies): an
	// llm-judge check may ask only a model it allows.
	Policy Policy
	// Route is the provider and model llm-judge checks ask (the turn
	// passes its own); it must be registered in GuardrailsBindings.Providers
	// and allowed by Policy. Zero routes to the first model, in the
	// registry's order, that Policy allows.
	Route ProviderRef
	// RequestID prefixes the request ids of judge calls (the turn passes
	// its step's); "" is Trace.RunID + "/evaluate-guardrails".
	RequestID string
	// Now stamps each outcome's EvaluatedAt; nil leaves it zero (a
	// compliance recorder then stamps its own time). The turn leaves it
	// nil: its journal holds only what a replay decides the same way.
	Now func() time.Time
}

// EvaluateGate checks every guardrail of in on in.Trace, in order, and
// returns every outcome, passed or failed (CategorizeOutcomes sorts them).
// An llm-judge guardrail whose check implements bindings.JudgeCheck gets a
// Judge routed under in.Policy (see GateInput.Route): a route the policy
// refuses, or no allowed model, is *agents.CapabilityRoutingError, and no
// provider registry is *agents.InvalidBindingsError. A check that cannot
// run fails closed with *agents.GuardrailViolationError (its verdict is
// unknown); an unregistered check is *agents.UnresolvedGuardrailError.
func EvaluateGate(ctx context.Context, in GateInput, b GuardrailsBindings) ([]GuardrailOutcome, error) {
	outs := make([]GuardrailOutcome, 0, len(in.Guardrails))
	base := in.RequestID
	if base == "" {
		base = in.Trace.RunID + "/" + NodeEvaluateGuardrails
	}
	var route *judgeRoute
	for _, g := range in.Guardrails {
		var chk bindings.Check
		ok := false
		if b.Checks != nil {
			chk, ok = b.Checks.Check(g.CheckID)
		}
		if !ok {
			return nil, &agents.UnresolvedGuardrailError{GuardrailID: g.ID, Reason: "check " + g.CheckID + " is not registered"}
		}
		o := GuardrailOutcome{ID: g.ID, CheckID: g.CheckID, Kind: g.Kind, Action: g.Action}
		var res bindings.CheckResult
		var err error
		if jc, isJudge := chk.(bindings.JudgeCheck); isJudge && g.Kind == bindings.KindLLMJudge {
			if route == nil {
				if route, err = routeJudge(in.Route, in.Policy, b.Providers); err != nil {
					return nil, err
				}
			}
			j := &judge{route: route, tenantID: in.Trace.TenantID, runID: in.Trace.RunID, requestID: base + "/" + g.ID}
			res, err = jc.EvaluateWithJudge(ctx, g.Config, in.Trace, j)
			o.Usage = j.total()
		} else {
			res, err = chk.Evaluate(ctx, g.Config, in.Trace)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			return nil, &agents.GuardrailViolationError{GuardrailID: g.ID, Reason: "check could not run: " + err.Error()}
		}
		o.Passed, o.Reason, o.JudgeResponse = res.Passed, res.Reason, res.JudgeResponse
		if in.Now != nil {
			o.EvaluatedAt = in.Now().UTC()
		}
		outs = append(outs, o)
	}
	return outs, nil
}

// GuardrailCategories sorts a gate's outcomes: Passed; Violations, the
// failed guardrails whose action is not halt (reported in
// Result.Violations, not carried out); Halted, the failed ones whose action
// is halt (the turn fails, the response is never stored).
type GuardrailCategories struct {
	Passed     []GuardrailOutcome
	Violations []Violation
	Halted     []GuardrailOutcome
}

// CategorizeOutcomes sorts outcomes into GuardrailCategories, each in the
// order given.
func CategorizeOutcomes(outcomes []GuardrailOutcome) GuardrailCategories {
	c := GuardrailCategories{Passed: []GuardrailOutcome{}, Violations: []Violation{}, Halted: []GuardrailOutcome{}}
	for _, o := range outcomes {
		switch {
		case o.Passed:
			c.Passed = append(c.Passed, o)
		case o.Action == bindings.ActionHalt:
			c.Halted = append(c.Halted, o)
		default:
			c.Violations = append(c.Violations, Violation{GuardrailID: o.ID, Kind: o.Kind, Action: o.Action, Reason: o.Reason})
		}
	}
	return c
}

// Err is the turn's failure for the first halted guardrail
// (*agents.GuardrailViolationError), or nil when none halted.
func (c GuardrailCategories) Err() error {
	if len(c.Halted) == 0 {
		return nil
	}
	return &agents.GuardrailViolationError{GuardrailID: c.Halted[0].ID, Reason: c.Halted[0].Reason}
}

// ComplianceKey is the key of the compliance record of the i-th
// evaluation of a run's evaluate-guardrails step.
func ComplianceKey(i int) string { return NodeEvaluateGuardrails + "/" + strconv.Itoa(i) }

// ComplianceRecords returns the audit records of a gate's outcomes for the
// run trace (one per outcome, keyed by ComplianceKey) at turnNumber.
func ComplianceRecords(trace bindings.RunTrace, turnNumber int, outcomes []GuardrailOutcome) []bindings.ComplianceRecord {
	recs := make([]bindings.ComplianceRecord, len(outcomes))
	for i, o := range outcomes {
		recs[i] = bindings.ComplianceRecord{
			TenantID: trace.TenantID, RunID: trace.RunID, Key: ComplianceKey(i),
			ConversationID: trace.ConversationID, TurnNumber: turnNumber,
			AgentID: trace.AgentID, AgentVersion: trace.AgentVersion,
			GuardrailID: o.ID, CheckID: o.CheckID, Kind: o.Kind, Action: o.Action,
			Passed: o.Passed, Reason: o.Reason, JudgeResponse: o.JudgeResponse, EvaluatedAt: o.EvaluatedAt,
		}
	}
	return recs
}

// RecordCompliance writes the records to the recorder, in order; each
// write is idempotent per (tenant, run, key), so writing them again (a
// resumed or replayed run) stores nothing twice. A nil recorder records
// nothing.
func RecordCompliance(ctx context.Context, rec bindings.ComplianceRecorder, recs []bindings.ComplianceRecord) error {
	if rec == nil {
		return nil
	}
	for _, r := range recs {
		if err := rec.RecordCompliance(ctx, r); err != nil {
			return coded(err, "record compliance")
		}
	}
	return nil
}

// judgeRoute is the provider and model llm-judge checks ask.
type judgeRoute struct {
	ref      ProviderRef
	provider bindings.Provider
	model    bindings.ModelInfo
}

// routeJudge finds the judge's provider and model: ref when set (it must
// be registered and allowed by p), else the first model p allows.
func routeJudge(ref ProviderRef, p Policy, reg bindings.ProviderRegistry) (*judgeRoute, error) {
	if reg == nil {
		return nil, &agents.InvalidBindingsError{Reason: "an llm-judge guardrail needs a provider registry (GuardrailsBindings.Providers)"}
	}
	var refusals []agents.RoutingRefusal
	try := func(pr bindings.Provider, m bindings.ModelInfo) *judgeRoute {
		if why := routing.Refusal(pr.ID(), m, nil, p.allow()); why != "" {
			refusals = append(refusals, agents.RoutingRefusal{Provider: pr.ID(), Model: m.ID, Reason: why})
			return nil
		}
		return &judgeRoute{ref: ProviderRef{Provider: pr.ID(), Model: m.ID}, provider: pr, model: m}
	}
	if ref.Provider != "" {
		pr, ok := reg.Provider(ref.Provider)
		if !ok || pr == nil {
			return nil, &agents.CapabilityRoutingError{Reason: "the llm-judge route's provider is not registered",
				Refusals: []agents.RoutingRefusal{{Provider: ref.Provider, Model: ref.Model, Reason: "provider not registered"}}}
		}
		m := bindings.ModelInfo{ID: ref.Model}
		for _, mi := range pr.Models() {
			if mi.ID == ref.Model {
				m = mi
				break
			}
		}
		if r := try(pr, m); r != nil {
			return r, nil
		}
		return nil, &agents.CapabilityRoutingError{Reason: "the tenant policy does not allow the llm-judge route", Refusals: refusals}
	}
	for _, pr := range reg.Providers() {
		for _, m := range pr.Models() {
			if r := try(pr, m); r != nil {
				return r, nil
			}
		}
	}
	return nil, &agents.CapabilityRoutingError{Reason: "no model the tenant policy allows can judge", Refusals: refusals}
}

// judge is the Judge an llm-judge check gets: the routed provider and
// model, each call with its own request id, usage summed.
type judge struct {
	route     *judgeRoute
	tenantID  string
	runID     string
	requestID string
	mu        sync.Mutex
	n         int
	usage     bindings.Usage
}

// Judge asks the routed model.
func (j *judge) Judge(ctx context.Context, messages []bindings.ChatMessage) (bindings.GenerateResponse, error) {
	j.mu.Lock()
	j.n++
	id := j.requestID + "/judge/" + strconv.Itoa(j.n)
	j.mu.Unlock()
	ref := j.route.ref
	resp, err := j.route.provider.Generate(ctx, bindings.GenerateRequest{
		Model: ref.Model, Messages: messages, RequestID: id, TenantID: j.tenantID, RunID: j.runID,
	})
	if err != nil {
		if agents.CodeOf(err) == "" {
			err = &agents.ModelInvocationError{Provider: ref.Provider, Model: ref.Model, Err: err}
		}
		return resp, err
	}
	if resp.Usage.CostUsd == 0 {
		resp.Usage.CostUsd = j.route.model.Cost(resp.Usage.InputTokens, resp.Usage.OutputTokens)
	}
	j.mu.Lock()
	j.usage = j.usage.Add(resp.Usage)
	j.mu.Unlock()
	return resp, nil
}

func (j *judge) total() bindings.Usage {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.usage
}
