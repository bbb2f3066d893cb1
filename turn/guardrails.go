package turn

import (
	"context"
	"strconv"
	"sync"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// guardrailOutcome is one guardrail's verdict on the final response.
type guardrailOutcome struct {
	ID     string         `json:"id"`
	Kind   string         `json:"kind"`
	Action string         `json:"action"`
	Passed bool           `json:"passed"`
	Reason string         `json:"reason,omitempty"`
	Usage  bindings.Usage `json:"usage"`
}

// evaluateGuardrails is the evaluate-guardrails node: every guardrail is
// checked once, on the final response, before it is stored. Each failed
// check is a guardrail.violated event; a failed check whose action is halt
// fails the turn with guardrail-violation (the first such guardrail) and
// the response is never written; other failures are reported in
// Result.Violations, not carried out. An llm-judge guardrail whose check
// implements bindings.JudgeCheck gets a Judge on the turn's provider and
// model, which the merged tenant policy allows. A check that cannot run
// fails the turn closed (guardrail-violation).
func (r *run) evaluateGuardrails(ctx context.Context) error {
	// With no guardrail to check the node only decides: it needs no
	// started entry (see bufferEntry).
	run := step[[]guardrailOutcome]
	if len(r.s.Guardrails) == 0 {
		run = decide[[]guardrailOutcome]
	}
	outs, err := run(ctx, r, NodeEvaluateGuardrails, NodeEvaluateGuardrails, func(ctx context.Context, requestID string) ([]guardrailOutcome, error) {
		outs := make([]guardrailOutcome, 0, len(r.s.Guardrails))
		if len(r.s.Guardrails) == 0 {
			return outs, nil
		}
		trace := r.trace()
		var halt error
		for _, g := range r.s.Guardrails {
			var chk bindings.Check
			ok := false
			if r.b.Checks != nil {
				chk, ok = r.b.Checks.Check(g.CheckID)
			}
			if !ok {
				return nil, &agents.UnresolvedGuardrailError{GuardrailID: g.ID, Reason: "check " + g.CheckID + " is not registered"}
			}
			o := guardrailOutcome{ID: g.ID, Kind: g.Kind, Action: g.Action}
			var res bindings.CheckResult
			var err error
			if jc, isJudge := chk.(bindings.JudgeCheck); isJudge && g.Kind == bindings.KindLLMJudge {
				j := &judge{r: r, requestID: requestID + "/" + g.ID}
				res, err = jc.EvaluateWithJudge(ctx, g.Config, trace, j)
				o.Usage = j.total()
			} else {
				res, err = chk.Evaluate(ctx, g.Config, trace)
			}
			if err != nil {
				if ctx.Err() != nil {
					return nil, err
				}
				return nil, &agents.GuardrailViolationError{GuardrailID: g.ID, Reason: "check could not run: " + err.Error()}
			}
			o.Passed, o.Reason = res.Passed, res.Reason
			outs = append(outs, o)
			if res.Passed {
				continue
			}
			r.emit(ctx, GuardrailViolatedEvent{RunID: r.id, GuardrailID: g.ID, Action: g.Action, Reason: res.Reason})
			if g.Action == bindings.ActionHalt && halt == nil {
				halt = &agents.GuardrailViolationError{GuardrailID: g.ID, Reason: res.Reason}
			}
		}
		if halt != nil {
			return nil, halt
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
	return nil
}

// trace is what a guardrail check sees of the turn.
func (r *run) trace() bindings.RunTrace {
	t := bindings.RunTrace{
		RunID: r.id, TenantID: r.tenantID, AgentID: r.agent.ID, AgentVersion: r.agent.Version,
		ConversationID: r.in.ConversationID,
		Messages:       make([]bindings.TraceMessage, len(r.messages)),
		ToolCalls:      append([]bindings.TraceToolCall{}, r.traceCalls...),
		Response:       bindings.TraceResponse{Content: r.final},
	}
	for i, m := range r.messages {
		t.Messages[i] = bindings.TraceMessage{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
	}
	return t
}

// judge is the Judge an llm-judge check gets: the turn's provider and
// model, each call with its own request id, usage summed.
type judge struct {
	r         *run
	requestID string
	mu        sync.Mutex
	n         int
	usage     bindings.Usage
}

// Judge asks the turn's model.
func (j *judge) Judge(ctx context.Context, messages []bindings.ChatMessage) (bindings.GenerateResponse, error) {
	j.mu.Lock()
	j.n++
	id := j.requestID + "/judge/" + strconv.Itoa(j.n)
	j.mu.Unlock()
	r := j.r
	resp, err := r.provider.Generate(ctx, bindings.GenerateRequest{
		Model: r.s.Route.Model, Messages: messages, RequestID: id, TenantID: r.tenantID, RunID: r.id,
	})
	if err != nil {
		if agents.CodeOf(err) == "" {
			err = &agents.ModelInvocationError{Provider: r.s.Route.Provider, Model: r.s.Route.Model, Err: err}
		}
		return resp, err
	}
	if resp.Usage.CostUsd == 0 {
		resp.Usage.CostUsd = r.s.Model.Cost(resp.Usage.InputTokens, resp.Usage.OutputTokens)
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
