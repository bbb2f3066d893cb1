package turn

import (
	"context"
	"strconv"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/gate"
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
	return gate.Resolve(ctx, b.Guardrails, b.Checks, tenantID, ids)
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
	var route *gate.Route
	find := func() (*gate.Route, error) {
		return gate.FindRoute(in.Route.Provider, in.Route.Model, in.Policy.allow(), b.Providers)
	}
	for _, g := range in.Guardrails {
		res, usage, err := gate.Check(ctx, b.Checks, g, in.Trace, &route, find, base+"/"+g.ID)
		if err != nil {
			return nil, err
		}
		o := GuardrailOutcome{ID: g.ID, CheckID: g.CheckID, Kind: g.Kind, Action: g.Action, Usage: usage}
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
	return gate.Record(ctx, rec, recs)
}
