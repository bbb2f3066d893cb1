package turn

import (
	"context"
	"fmt"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/drive"
)

// DefaultMaxStepAttempts is Bindings.MaxStepAttempts when it is zero.
const DefaultMaxStepAttempts = 5

// maxAttempts is Bindings.MaxStepAttempts or its default.
func (r *run) maxAttempts() int {
	if r.b.MaxStepAttempts > 0 {
		return r.b.MaxStepAttempts
	}
	return DefaultMaxStepAttempts
}

// step runs a node's side effect at most once per run: it is the only way
// the turn performs one.
//
//   - A completed entry for key is decoded and returned without running fn;
//     a failed one returns its recorded coded error.
//   - A started entry without a result (the driver died mid-step) runs fn
//     again with the same request id, once the drive holds the run's
//     lease (drive.Journal.HoldLease): a resumer that lost the run calls nothing.
//   - Otherwise step appends started, runs fn, and appends completed with
//     fn's output as JSON, or failed with fn's coded error.
//
// An error that is not the step's own outcome — a storage failure, a lost
// lease, a cancelled context — is returned without being journaled, so the
// run can continue later from this step.
func step[T any](ctx context.Context, r *run, key, node string, fn func(ctx context.Context, requestID string) (T, error)) (T, error) {
	return runStep(ctx, r, key, node, kindEffect, fn)
}

// decide is step for a node whose effect is safe to repeat: one that only
// reads and decides (setup, rendering, retrieval, planning, budget checks,
// composing the result) or writes idempotently under a deterministic key
// (a message under its id, provenance under the run id). Its outcome is
// journaled the same way, but without a started entry first: running it
// again after a crash changes nothing. Model calls, tool calls and
// guardrail checks (which may ask a model) use step, so a journal shows
// which of them were in flight when a driver died. A decide step calls
// nobody, so fn gets an empty request id (none is built for it).
func decide[T any](ctx context.Context, r *run, key, node string, fn func(ctx context.Context, requestID string) (T, error)) (T, error) {
	return runStep(ctx, r, key, node, kindDecide, fn)
}

// stepKind says how runStep journals a step.
type stepKind int

const (
	// kindDecide: no started entry; the result is buffered (drive.Journal.BufferEntry).
	kindDecide stepKind = iota
	// kindEffect: a started entry first; the result is carried by the
	// drive's next write (see drive.Journal.Carry).
	kindEffect
	// kindMessage: a decide step whose effect is a message append through
	// r.AppendMessage, which writes the buffer in the same call; its fn
	// gets the message id as its request id.
	kindMessage
)

func runStep[T any](ctx context.Context, r *run, key, node string, kind stepKind, fn func(ctx context.Context, requestID string) (T, error)) (T, error) {
	effect := kind == kindEffect
	var zero T
	st := r.Key(key)
	if st != nil && st.Result != 0 {
		var out T
		var err error
		if p, ok := any(r.setupDecoded).(*T); ok && p != nil && key == NodeSetup {
			out, r.setupDecoded = *p, nil // decoded from this entry by recheckRoute; used once
		} else {
			e := r.At(st.Result)
			out, err = drive.DecodeOutcome[T](e, r.InPlace(e))
		}
		if err != nil && r.At(st.Result).Status == bindings.StepFailed {
			r.Failed = true
		}
		if r.logger != nil {
			r.logReplayed(ctx, key, node, string(r.At(st.Result).Status))
		}
		return out, err
	}
	if r.Replaying {
		return zero, &agents.RunJournalUnavailableError{RunID: r.id, Err: fmt.Errorf("the finished run's journal has no result for step %s", key)}
	}
	if err := r.live(ctx); err != nil {
		return zero, err
	}
	if err := r.loadMessages(); err != nil { // a step that runs may read them
		return zero, err
	}
	if effect && st != nil && st.Started != 0 {
		// The effect was in flight when a driver died: it runs again
		// without writing a started entry, so nothing written so far
		// need have taken this drive's lease (an optimistic resume or
		// open takes it with its first write). Hold it before the call:
		// write the buffer — the decisions made since the read, and an
		// earlier effect's carried result, which must be stored before
		// another effect starts — which takes the lease as read, or take
		// the lease alone when nothing waits. A drive that lost the race
		// stops here, run-busy, having called nothing. (A decide step
		// leaves the buffer as it is: it has no effect outside the run,
		// its own result is buffered after it, and both go with the next
		// write, in order.)
		if err := r.HoldLease(ctx); err != nil {
			return zero, err
		}
	}
	if effect {
		if st == nil || st.Started == 0 {
			if _, _, err := r.AppendEntry(ctx, key, node, bindings.StepStarted, nil, nil); err != nil {
				return zero, err
			}
		} else if n := st.Attempts; n >= r.maxAttempts() {
			// The step failed this often without a result: the failure
			// recurs, and calling again would only repeat (and bill) it.
			return zero, r.Fail(ctx, key, node, &agents.StepAttemptsExhaustedError{RunID: r.id, StepKey: key, Attempts: n})
		}
		r.Inflight, r.InflightNode = key, node
	}
	if r.b.OnEvent != nil {
		emit(r, ctx, NodeStartedEvent{RunID: r.id, Node: node, Key: key})
	}
	var start time.Time
	if r.logger != nil {
		start = time.Now()
	}
	var requestID string
	switch kind {
	case kindEffect:
		requestID = r.DerivedID(key)
	case kindMessage:
		requestID = r.messageID(key) // persist's fn takes it as the message id
	}
	var out T
	var err error
	if effect {
		out, err = callEffect(ctx, r, node, requestID, fn)
	} else {
		out, err = fn(ctx, requestID)
	}
	if r.logger != nil {
		r.logStep(ctx, key, node, start, out, err)
	}
	if r.b.OnEvent != nil {
		emit(r, ctx, NodeCompletedEvent{RunID: r.id, Node: node, Key: key, Code: agents.CodeOf(err)})
	}
	if err != nil {
		if !final(ctx, err) {
			return zero, err
		}
		return zero, r.Fail(ctx, key, node, err)
	}
	var raw []byte
	if !r.DeferredOutput(key) { // a deferred message's output is the store's to fill
		raw, err = encodeStep(r, &out)
	}
	if err != nil {
		return zero, &agents.PersistenceError{Op: "encode step " + key, Err: err, Permanent: true}
	}
	var e bindings.JournalEntry
	var appended bool
	switch {
	case effect:
		e, appended, err = r.Carry(ctx, key, node, raw)
	default:
		e, appended, err = r.BufferEntry(ctx, key, node, raw)
	}
	if err != nil {
		return zero, err
	}
	if !appended {
		// Another driver recorded this step first: its result is the one.
		return drive.DecodeResult[T](&e)
	}
	return out, nil
}

// callEffect runs the body of a model or tool step. A panic in it (a
// provider, tool or check that panics) is counted as a failed attempt of
// the step (drive.Journal.NoteAttempt) and goes on: the drive still ends with the panic,
// but a step that panics on every drive ends the run after
// Bindings.MaxStepAttempts drives, as any recurring failure does.
func callEffect[T any](ctx context.Context, r *run, node, requestID string, fn func(ctx context.Context, requestID string) (T, error)) (T, error) {
	defer func() {
		if p := recover(); p != nil {
			msg := fmt.Sprintf("the step panicked: %v", p)
			var err error
			switch node {
			case NodeModelCall:
				err = &agents.ModelInvocationError{Provider: r.s.Route.Provider, Model: r.s.Route.Model, Message: msg}
			case NodeEvaluateGuardrails:
				err = &agents.GuardrailViolationError{Reason: msg}
			default:
				err = &agents.ToolInvocationError{Message: msg}
			}
			r.NoteAttempt(context.WithoutCancel(ctx), err)
			panic(p)
		}
	}()
	return fn(ctx, requestID)
}

// final reports whether err is a step's own outcome, to be journaled as
// failed: a coded error other than the storage and lease errors, with the
// driver's context still live.
func final(ctx context.Context, err error) bool {
	if ctx.Err() != nil || isDriverFault(err) || isQuotaWait(err) {
		return false
	}
	switch agents.CodeOf(err) {
	case "", agents.CodePersistence, agents.CodeRunBusy, agents.CodeRunJournalUnavailable,
		agents.CodeRunSnapshotMissing:
		return false
	}
	return true
}

// Final is final, for the drive's journal (drive.Flow).
func (r *run) Final(ctx context.Context, err error) bool { return final(ctx, err) }
