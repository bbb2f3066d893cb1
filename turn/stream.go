package turn

import (
	"context"
	"iter"
	"slices"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/chatlog"
	"github.com/kindgi/agents/turn/internal/events"
)

// KindModelCallDelta is the kind of ModelCallDeltaEvent.
const KindModelCallDelta = "model.call.delta"

// ModelCallDeltaEvent: a piece of a streamed model answer arrived (from a
// provider that is a bindings.StreamingProvider). Deltas come between the
// call's model.call.started and model.call.completed, in the order the
// provider sent them. They are not journaled: what the journal stores is
// the assembled response, so a replayed call emits no deltas. When a
// stream fails part-way and the turn calls the model again, a new
// model.call.started (same request id, Attempt 2) comes first: a host
// showing the answer as it arrives starts it afresh.
type ModelCallDeltaEvent struct {
	RunID     string         `json:"runId"`
	Iteration int            `json:"iteration"`
	Delta     bindings.Delta `json:"delta"`
}

// Kind returns "model.call.delta".
func (ModelCallDeltaEvent) Kind() string { return KindModelCallDelta }

// generateRequest is the model call of the drive's state: the messages so
// far, the tools, the agent's settings overridden by the turn's, and the
// agent's output schema.
func (r *run) generateRequest(requestID string) bindings.GenerateRequest {
	req := bindings.GenerateRequest{
		Model: r.s.Route.Model, Messages: slices.Clip(chatlog.WellFormed(r.messages)), Tools: r.toolDefs,
		RequestID: requestID, TenantID: r.tenantID, RunID: r.id,
		Output: r.in.Agent.Output,
	}
	if s := r.in.Agent.ModelSettings; s != nil {
		req.Settings = *s
	}
	if !r.in.ModelSettings.IsZero() {
		req.Settings = req.Settings.Merge(r.in.ModelSettings)
	}
	return req
}

// generate sends a model call: streamed, with a ModelCallDeltaEvent per
// delta, when the provider is a bindings.StreamingProvider. A stream that
// fails after it delivered deltas (which the provider does not retry) is
// sent once more, under the same request id, after a second
// ModelCallStartedEvent (Attempt 2): nothing of the failed attempt was
// kept, so the call starts afresh. The provider's own retries are reported
// through ctx (withRetryReport).
func (r *run) generate(ctx context.Context, i int, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	ctx = r.withRetryReport(ctx, i, req.RequestID)
	sp, ok := r.provider.(bindings.StreamingProvider)
	if !ok {
		return r.provider.Generate(ctx, req)
	}
	delivered := false
	onDelta := func(d bindings.Delta) {
		delivered = true
		if r.b.OnEvent != nil {
			emit(r, ctx, ModelCallDeltaEvent{RunID: r.id, Iteration: i, Delta: d})
		}
	}
	resp, err := sp.GenerateStream(ctx, req, onDelta)
	if err == nil || !delivered || ctx.Err() != nil || agents.CodeOf(err) != agents.CodeModelInvocationFailed {
		return resp, err
	}
	emit(r, ctx, ModelCallStartedEvent{RunID: r.id, Iteration: i, Provider: r.s.Route.Provider, Model: r.s.Route.Model, RequestID: req.RequestID, Attempt: 2})
	return sp.GenerateStream(ctx, req, onDelta)
}

// emitEnd emits the event that ends a drive that did not fail, with the
// result.
func (r *run) emitEnd(ctx context.Context, res Result) {
	if res.Status == StatusSuspended {
		ids := make([]string, len(res.Approvals))
		for i, a := range res.Approvals {
			ids[i] = a.ID
		}
		emit(r, ctx, TurnSuspendedEvent{RunID: r.id, ApprovalIDs: ids, Result: &res})
		return
	}
	emit(r, ctx, TurnCompletedEvent{RunID: r.id, TurnNumber: res.TurnNumber, Usage: res.Usage, Result: &res})
}

// checkModelSettings reports turn settings out of range as invalid-message.
func checkModelSettings(in Input) error {
	if issues := agent.CheckModelSettings("modelSettings", in.ModelSettings); len(issues) > 0 {
		reason := "turn input: "
		for j, is := range issues {
			if j > 0 {
				reason += "; "
			}
			reason += is.String()
		}
		return &agents.InvalidMessageError{Reason: reason}
	}
	return nil
}

// Events runs one turn, as Invoke does, and yields its events as they
// happen, for hosts that prefer a range loop to Bindings.OnEvent (which,
// when set, still receives every event first). The last event of a turn
// that did not fail is TurnCompletedEvent or TurnSuspendedEvent, whose
// Result is the turn's result; a turn that failed yields its
// TurnFailedEvent and then (nil, err) with Invoke's error. An error
// before the turn starts (invalid input or bindings) is yielded alone.
// The events of a sub-agent's child run come in between, each with the
// child's run id (its own TurnStartedEvent and TurnCompletedEvent too):
// the turn's end is the event with the turn's run id.
//
// The turn waits while the loop body runs. Leaving the loop early cancels
// the turn (turn-aborted, external, as a cancelled ctx) and waits for it to
// stop: no goroutine outlives the loop.
func Events(ctx context.Context, in Input, b Bindings) iter.Seq2[Event, error] {
	return events.Of(ctx, b.OnEvent, func(ctx context.Context, on func(context.Context, Event)) error {
		b.OnEvent = on
		_, err := Invoke(ctx, in, b)
		return err
	})
}
