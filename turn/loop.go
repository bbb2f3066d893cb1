package turn

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// loopKey is the key prefix of loop iteration i: "agent-loop/2".
func loopKey(i int) string { return NodeAgentLoop + "/" + strconv.Itoa(i) }

// loop is the agent-loop node: model-call → dispatch-tools → budget-check,
// at most LoopMaxIterations times, until the model answers without tool
// calls. It returns a suspended result when dispatch parked on approvals.
func (r *run) loop(ctx context.Context) (Result, bool, error) {
	for i := 1; i <= LoopMaxIterations; i++ {
		resp, err := r.modelCall(ctx, i)
		if err != nil {
			return Result{}, false, err
		}
		calls := resp.ToolCalls
		r.messages = append(r.messages, bindings.ChatMessage{Role: bindings.ChatAssistant, Content: resp.Text, ToolCalls: calls})
		fix := false // the answer goes back to the model (validateOutput)
		if len(calls) == 0 && len(r.agent.Output) > 0 && !r.in.DryRun {
			if fix, err = r.validateOutput(ctx, i, resp.Text); err != nil {
				return Result{}, false, err
			}
		}
		if len(calls) > 0 {
			if _, err := r.persist(ctx, loopKey(i)+"/"+NodeModelCall+"/message", NodeModelCall, bindings.AppendMessageInput{
				Role: bindings.RoleAgent, Content: resp.Text, ToolCalls: calls,
			}, nil); err != nil {
				return Result{}, false, err
			}
			approvals, err := r.dispatch(ctx, i, calls)
			if err != nil {
				return Result{}, false, err
			}
			if approvals != nil {
				return r.compose(StatusSuspended, "", approvals), true, nil
			}
		}
		if err := r.budgetCheck(ctx, i, len(calls) > 0 || fix); err != nil {
			return Result{}, false, err
		}
		if len(calls) == 0 && !fix {
			r.final = resp.Text
			return Result{}, false, nil
		}
	}
	// budgetCheck refuses an iteration past LoopMaxIterations; not reached.
	return Result{}, false, &agents.BudgetExceededError{Kind: agents.BudgetSteps, Limit: LoopMaxIterations, Used: LoopMaxIterations}
}

// modelCall is the model-call step of iteration i. A dry run skips the
// call and answers with empty text. The response is journaled with its
// tool call ids made unique and its arguments made valid JSON, and its
// usage folds into the turn's.
func (r *run) modelCall(ctx context.Context, i int) (bindings.GenerateResponse, error) {
	resp, err := step(ctx, r, loopKey(i)+"/"+NodeModelCall, NodeModelCall, func(ctx context.Context, requestID string) (bindings.GenerateResponse, error) {
		if r.in.DryRun {
			return bindings.GenerateResponse{Model: r.s.Route.Model, FinishReason: "dry-run"}, nil
		}
		r.emit(ctx, ModelCallStartedEvent{RunID: r.id, Iteration: i, Provider: r.s.Route.Provider, Model: r.s.Route.Model, RequestID: requestID})
		resp, err := r.generate(ctx, i, r.generateRequest(requestID))
		if err != nil {
			if agents.CodeOf(err) == "" || ctx.Err() != nil {
				return resp, &agents.ModelInvocationError{Provider: r.s.Route.Provider, Model: r.s.Route.Model, Err: err}
			}
			return resp, err
		}
		if resp.Usage.CostUsd == 0 {
			resp.Usage.CostUsd = r.s.Model.Cost(resp.Usage.InputTokens, resp.Usage.OutputTokens)
		}
		resp.ToolCalls = normalizeCalls(i, resp.ToolCalls)
		r.emit(ctx, ModelCallCompletedEvent{
			RunID: r.id, Iteration: i, Provider: r.s.Route.Provider, Model: r.s.Route.Model, ResponseModel: resp.Model, ToolCalls: len(resp.ToolCalls),
			Usage: UsageDelta{InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens, CostUsd: resp.Usage.CostUsd},
		})
		return resp, nil
	})
	if err != nil {
		return resp, err
	}
	if !r.in.DryRun {
		r.usage.ModelCalls++
	}
	r.usage.InputTokens += resp.Usage.InputTokens
	r.usage.OutputTokens += resp.Usage.OutputTokens
	r.usage.CostUsd += resp.Usage.CostUsd
	return resp, nil
}

// normalizeCalls gives every tool call of a response a unique, non-empty
// id (a parallel call's approval and result must never be confused with
// another's) and valid JSON arguments (malformed arguments become a JSON
// string, which the input schema then refuses).
func normalizeCalls(i int, calls []bindings.ToolCall) []bindings.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]bindings.ToolCall, len(calls))
	seen := make(map[string]bool, len(calls))
	for j, c := range calls {
		if c.ID == "" || seen[c.ID] {
			c.ID = "call-" + strconv.Itoa(i) + "-" + strconv.Itoa(j+1)
			for seen[c.ID] {
				c.ID += "x"
			}
		}
		seen[c.ID] = true
		if len(c.Arguments) == 0 {
			c.Arguments = json.RawMessage(`{}`)
		} else if !json.Valid(c.Arguments) {
			c.Arguments, _ = json.Marshal(string(c.Arguments))
		} else {
			c.Arguments = journaled(c.Arguments)
		}
		out[j] = c
	}
	return out
}

// callKey is the step key of a tool call: the call id is escaped so that
// it cannot reach into another key's path.
func callKey(i int, id string) string {
	return loopKey(i) + "/" + NodeDispatchTools + "/" + url.PathEscape(id)
}
