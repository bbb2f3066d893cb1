package turn

import (
	"context"

	"github.com/kindgi/agents/bindings"
)

// evaluateGuardrails is the evaluate-guardrails node: every guardrail is
// checked once, on the final response, before it is stored (EvaluateGate),
// and its outcome journaled, passed or failed. Each failed check is a
// guardrail.violated event. With a compliance recorder each outcome is
// then written as an audit record from a step of its own
// ("evaluate-guardrails/compliance"), after the outcomes are journaled: a
// resumed or replayed run writes the same records again, which the
// recorder stores once. A failed check whose action is halt then fails the
// turn with guardrail-violation (the first such guardrail,
// CategorizeOutcomes) and the response is never written; other failures
// are reported in Result.Violations, not carried out. An llm-judge
// guardrail whose check implements bindings.JudgeCheck gets a Judge on the
// turn's provider and model, which the merged tenant policy allows. A
// check that cannot run fails the turn closed (guardrail-violation), and
// no record is written: there is no verdict to record. A dry run records
// no compliance.
func (r *run) evaluateGuardrails(ctx context.Context) error {
	// With no guardrail to check the node only decides: it needs no
	// started entry (see bufferEntry).
	run := step[[]GuardrailOutcome]
	if len(r.s.Guardrails) == 0 {
		run = decide[[]GuardrailOutcome]
	}
	outs, err := run(ctx, r, NodeEvaluateGuardrails, NodeEvaluateGuardrails, func(ctx context.Context, requestID string) ([]GuardrailOutcome, error) {
		if len(r.s.Guardrails) == 0 {
			return []GuardrailOutcome{}, nil
		}
		outs, err := EvaluateGate(ctx, GateInput{
			Guardrails: r.s.Guardrails, Trace: r.trace(), Policy: r.s.Policy, Route: r.s.Route,
			RequestID: requestID,
		}, r.guardrailsBindings())
		if err != nil {
			return nil, err
		}
		for _, o := range outs {
			if !o.Passed {
				emit(r, ctx, GuardrailViolatedEvent{RunID: r.id, GuardrailID: o.ID, Action: o.Action, Reason: o.Reason})
			}
		}
		return outs, nil
	})
	if err != nil {
		return err
	}
	r.outcomes = outs
	for _, o := range outs {
		r.usage.InputTokens += o.Usage.InputTokens
		r.usage.OutputTokens += o.Usage.OutputTokens
		r.usage.CostUsd += o.Usage.CostUsd
	}
	if len(outs) > 0 && r.b.Compliance != nil && !r.in.DryRun {
		// Writes are idempotent per record: no started entry is needed.
		if _, err := decide(ctx, r, NodeEvaluateGuardrails+"/compliance", NodeEvaluateGuardrails, func(ctx context.Context, _ string) (int, error) {
			if err := r.HoldLease(ctx); err != nil {
				return 0, err
			}
			recs := ComplianceRecords(r.trace(), r.s.TurnNumber, outs)
			return len(recs), RecordCompliance(ctx, r.b.Compliance, recs)
		}); err != nil {
			return err
		}
	}
	if halt := CategorizeOutcomes(outs).Err(); halt != nil {
		_, err := decide(ctx, r, NodeEvaluateGuardrails+"/halt", NodeEvaluateGuardrails, func(context.Context, string) (struct{}, error) {
			return struct{}{}, halt
		})
		return err
	}
	return nil
}

// guardrailsBindings are the turn's bindings for the guardrail steps.
func (r *run) guardrailsBindings() GuardrailsBindings {
	return GuardrailsBindings{Guardrails: r.b.Guardrails, Checks: r.b.Checks, Compliance: r.b.Compliance, Providers: r.b.Providers}
}

// trace is what a guardrail check sees of the turn.
func (r *run) trace() bindings.RunTrace {
	return BuildRunTrace(RunTraceInput{
		RunID: r.id, TenantID: r.tenantID, AgentID: r.in.Agent.ID, AgentVersion: r.in.Agent.Version,
		ConversationID: r.in.ConversationID, Messages: r.messages, ToolCalls: r.traceCalls, Response: r.final,
	})
}
