package turn

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/modelresp"
)

// loopKey is the key prefix of loop iteration i: "agent-loop/2".
func loopKey(i int) string {
	if i >= 1 && i <= LoopMaxIterations {
		return iterationKeys[i].loop
	}
	return NodeAgentLoop + "/" + strconv.Itoa(i)
}

// iterKeys are the step keys of one loop iteration.
type iterKeys struct {
	loop, modelCall, modelMessage, dispatch, budget string
}

// iterationKeys holds the keys of every iteration the loop can run, built
// once: a step key costs no string building (nor allocation) per turn.
var iterationKeys = func() (t [LoopMaxIterations + 1]iterKeys) {
	for i := 1; i <= LoopMaxIterations; i++ {
		l := NodeAgentLoop + "/" + strconv.Itoa(i)
		t[i] = iterKeys{
			loop: l, modelCall: l + "/" + NodeModelCall, modelMessage: l + "/" + NodeModelCall + "/message",
			dispatch: l + "/" + NodeDispatchTools, budget: l + "/" + NodeBudgetCheck,
		}
	}
	return t
}()

// keysOf returns the step keys of iteration i (1 ≤ i ≤ LoopMaxIterations).
func keysOf(i int) *iterKeys { return &iterationKeys[i] }

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
		if len(calls) == 0 && len(r.in.Agent.Output) > 0 && !r.in.DryRun {
			if fix, err = r.validateOutput(ctx, i, resp.Text); err != nil {
				return Result{}, false, err
			}
		}
		if len(calls) > 0 {
			// Past the cap, calls are never run nor stored: the model is
			// told below, after the results of the calls that ran.
			run, over := calls, []bindings.ToolCall(nil)
			if limit := r.maxToolCalls(); len(calls) > limit {
				run, over = calls[:limit:limit], calls[limit:]
			}
			if _, err := r.persist(ctx, keysOf(i).modelMessage, NodeModelCall, bindings.AppendMessageInput{
				Role: bindings.RoleAgent, Content: resp.Text, ToolCalls: run,
			}, nil); err != nil {
				return Result{}, false, err
			}
			approvals, err := r.dispatch(ctx, i, run)
			if err != nil {
				return Result{}, false, err
			}
			if approvals != nil {
				return r.compose(StatusSuspended, "", approvals), true, nil
			}
			if len(over) > 0 {
				content := errorContent(fmt.Sprintf("not run: a response may make at most %d tool calls; this call was number %d or later, so it was ignored. Make fewer calls at once.", len(run), len(run)+1))
				for _, c := range over {
					r.messages = append(r.messages, bindings.ChatMessage{Role: bindings.ChatTool, Content: content, ToolCallID: c.ID})
				}
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
	resp, err := step(ctx, r, keysOf(i).modelCall, NodeModelCall, func(ctx context.Context, requestID string) (bindings.GenerateResponse, error) {
		if r.in.DryRun {
			return bindings.GenerateResponse{Model: r.s.Route.Model, FinishReason: "dry-run"}, nil
		}
		var unit string // the call's quota unit (modelQuotas, addUsage)
		if err := r.modelQuotas(ctx, keysOf(i).modelCall, &unit); err != nil {
			return bindings.GenerateResponse{}, err
		}
		emit(r, ctx, ModelCallStartedEvent{RunID: r.id, Iteration: i, Provider: r.s.Route.Provider, Model: r.s.Route.Model, RequestID: requestID})
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
		if msg := modelresp.BadUsage(resp.Usage); msg != "" {
			// Final: the same response would break the budget (and the
			// journal) on every drive.
			return bindings.GenerateResponse{}, &agents.ModelInvocationError{Provider: r.s.Route.Provider, Model: r.s.Route.Model, Message: msg}
		}
		if len(r.quotas) > 0 {
			if err := r.addUsage(ctx, keysOf(i).modelCall, &unit, resp.Usage); err != nil {
				return bindings.GenerateResponse{}, err
			}
		}
		resp.ToolCalls = normalizeCalls(i, resp.ToolCalls)
		emit(r, ctx, ModelCallCompletedEvent{
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

// Limits on what a model's response may hold.
const (
	// MaxToolCallIDLength is the longest tool call id, in bytes, the turn
	// keeps as the model gave it. An id that is empty, longer, not valid
	// UTF-8, holds a control character, or repeats an earlier id of the
	// same response is replaced by "call-<iteration>-<position>" (1-based;
	// "x" is appended while that is taken), deterministically, before the
	// response is journaled: the journal, the stored messages and every
	// later request use the replacement.
	MaxToolCallIDLength = 64
	// MaxToolNameLength is the longest tool name, in bytes, of a call the
	// turn considers (an agent's tool ids are at most agent.MaxIDLength).
	// A name that is empty, longer, not valid UTF-8 or holds a control
	// character is replaced by InvalidToolName; such a call never runs and
	// is answered to the model with an error.
	MaxToolNameLength = 128
	// InvalidToolName stands for a tool name that broke MaxToolNameLength's
	// rules. No agent tool can have it (tool ids start with a letter or
	// digit).
	InvalidToolName = "_invalid_tool_name"
	// DefaultMaxToolCallsPerResponse is Bindings.MaxToolCallsPerResponse
	// when it is zero.
	DefaultMaxToolCallsPerResponse = 64
)

// maxToolCalls is the run's cap on the tool calls of one response: the
// one setup journaled, so every drive caps alike.
func (r *run) maxToolCalls() int {
	if r.s.Budget.MaxToolCalls > 0 {
		return r.s.Budget.MaxToolCalls
	}
	return toolCallsCap(r.b)
}

// toolCallsCap is Bindings.MaxToolCallsPerResponse or its default.
func toolCallsCap(b *Bindings) int {
	if b.MaxToolCallsPerResponse > 0 {
		return b.MaxToolCallsPerResponse
	}
	return DefaultMaxToolCallsPerResponse
}

// normalizeCalls gives every tool call of a response a unique, valid id (a
// parallel call's approval and result must never be confused with
// another's; see MaxToolCallIDLength) and a valid name (MaxToolNameLength)
// with modelresp.FixCalls, and valid JSON arguments
// (modelresp.FixArguments).
func normalizeCalls(i int, calls []bindings.ToolCall) []bindings.ToolCall {
	out := modelresp.FixCalls(i, calls)
	modelresp.FixArguments(out)
	return out
}

// callKey is the step key of a tool call: the call id is escaped so that
// it cannot reach into another key's path.
func callKey(i int, id string) string {
	return loopKey(i) + "/" + NodeDispatchTools + "/" + url.PathEscape(id)
}
