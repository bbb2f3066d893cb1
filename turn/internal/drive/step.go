package drive

import (
	"context"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/journalcodec"
)

// Kind says how Step journals a step.
type Kind int

const (
	// Decide is a step that only reads and decides, or writes
	// idempotently under a deterministic key: no started entry; its
	// result is buffered (BufferEntry).
	Decide Kind = iota
	// Effect is a model or tool call (or a check that may make one): a
	// started entry first; its result is carried by the drive's next
	// write (Carry).
	Effect
	// Message is a decide step whose effect is a message append through
	// AppendMessage or DeferMessage, which writes the buffer in the same
	// call; its function gets the message id as its request id.
	Message
)

// Steps is what Step asks of the turn besides the step's function.
type Steps interface {
	// Prepare loads what a step that runs may read (the turn's lazily
	// decoded messages).
	Prepare() error
	// Panicked returns the error a panic p in a step of node counts as.
	Panicked(node string, p any) error
	// Started, Ended and Replayed report a step's start, end and replay:
	// Started and Ended's events only when Config.Events is set, Ended's
	// log (with out, else nil) and Replayed only once LogSteps was called.
	Started(ctx context.Context, key, node string)
	Ended(ctx context.Context, key, node string, start time.Time, out any, err error)
	Replayed(ctx context.Context, key, node string, status string)
}

// Predecode hands Step the decoded result of step key, p (a *T of the
// step's output type), to return instead of decoding the entry again:
// once, on the step's replay.
func (j *Journal) Predecode(key string, p any) { j.decodedKey, j.decoded = key, p }

// EncodeWith gives the codec o for the output of the step whose function
// is returning (what the turn knows of it that the codec cannot): the
// step's function calls it last, and Step takes it for that output only.
// (A method of the journal rather than of Steps: an output passed to an
// interface method would leave every step's output on the heap.)
func (j *Journal) EncodeWith(o *journalcodec.Options) { j.encodeOpts = o }

// LogSteps makes Step report to Steps.Ended (with the output) and
// Steps.Replayed for the rest of the drive.
func (j *Journal) LogSteps() { j.logging = true }

// Step runs a node's step of kind kind under key: it is the only way the
// turn performs a side effect, at most once per run.
//
//   - A completed entry for key is decoded and returned without running fn;
//     a failed one returns its recorded coded error.
//   - An effect with a started entry and no result (the driver died
//     mid-step) runs fn again with the same request id, once the drive
//     holds the run's lease (HoldLease): a resumer that lost the run calls
//     nothing; after Config.MaxAttempts attempts without a result it fails
//     for good.
//   - Otherwise an effect appends started, runs fn, and carries its result
//     (Carry); a decide or message step runs fn and buffers its result
//     (BufferEntry); a failure that is the step's own outcome
//     (Flow.Final) is journaled (Fail).
//
// An error that is not the step's own outcome — a storage failure, a lost
// lease, a cancelled context — is returned without being journaled, so the
// run can continue later from this step.
func Step[T any](ctx context.Context, j *Journal, key, node string, kind Kind, fn func(ctx context.Context, requestID string) (T, error)) (T, error) {
	effect := kind == Effect
	var zero T
	st := j.entries.get(key)
	if st != nil && st.Result != 0 {
		var out T
		var err error
		e := j.At(st.Result)
		if p, ok := j.decoded.(*T); ok && p != nil && j.decodedKey == key {
			out, j.decoded = *p, nil // decoded from this entry already; used once
		} else {
			out, err = DecodeOutcome[T](e, j.InPlace(e))
		}
		if err != nil && e.Status == bindings.StepFailed {
			j.Failed = true
		}
		if j.logging {
			j.steps.Replayed(ctx, key, node, string(e.Status))
		}
		return out, err
	}
	if j.Replaying {
		return zero, j.errNoResult(key)
	}
	if err := j.CheckLease(); err != nil {
		return zero, err
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if err := j.steps.Prepare(); err != nil { // a step that runs may read it
		return zero, err
	}
	if effect {
		if st != nil && st.Started != 0 {
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
			if err := j.HoldLease(ctx); err != nil {
				return zero, err
			}
			if n := st.Attempts; n >= j.maxAttempts {
				// The step failed this often without a result: the failure
				// recurs, and calling again would only repeat (and bill) it.
				return zero, j.Fail(ctx, key, node, &agents.StepAttemptsExhaustedError{RunID: j.runID, StepKey: key, Attempts: n})
			}
		} else if _, _, err := j.AppendEntry(ctx, key, node, bindings.StepStarted, nil, nil); err != nil {
			return zero, err
		}
		j.Inflight, j.InflightNode = key, node
	}
	if j.events {
		j.steps.Started(ctx, key, node)
	}
	var start time.Time
	if j.logging {
		start = time.Now()
	}
	var requestID string
	if kind != Decide {
		requestID = j.DerivedID(key) // a message step's fn takes it as the message id
	}
	var out T
	var err error
	j.encodeOpts = nil
	if effect {
		out, err = callEffect(ctx, j, node, requestID, fn)
	} else {
		out, err = fn(ctx, requestID)
	}
	opts := j.encodeOpts // the function's last word (EncodeWith)
	j.encodeOpts = nil
	if j.logging {
		j.steps.Ended(ctx, key, node, start, out, err)
	} else if j.events {
		j.steps.Ended(ctx, key, node, start, nil, err)
	}
	if err != nil {
		if !j.flow.Final(ctx, err) {
			return zero, err
		}
		return zero, j.Fail(ctx, key, node, err)
	}
	var raw []byte
	if !j.DeferredOutput(key) { // a deferred message's output is the store's to fill
		raw, err = EncodeStep(j, &out, opts)
	}
	if err != nil {
		return zero, &agents.PersistenceError{Op: "encode step " + key, Err: err, Permanent: true}
	}
	var e bindings.JournalEntry
	var appended bool
	if effect {
		e, appended, err = j.Carry(ctx, key, node, raw)
	} else {
		e, appended, err = j.BufferEntry(ctx, key, node, raw)
	}
	if err != nil {
		return zero, err
	}
	if !appended {
		// Another driver recorded this step first: its result is the one.
		return DecodeResult[T](&e)
	}
	return out, nil
}

// callEffect runs the body of a model or tool step. A panic in it (a
// provider, tool or check that panics) is counted as a failed attempt of
// the step (NoteAttempt) and goes on: the drive still ends with the panic,
// but a step that panics on every drive ends the run after
// Config.MaxAttempts drives, as any recurring failure does.
func callEffect[T any](ctx context.Context, j *Journal, node, requestID string, fn func(ctx context.Context, requestID string) (T, error)) (T, error) {
	defer func() {
		if p := recover(); p != nil {
			j.NoteAttempt(context.WithoutCancel(ctx), j.steps.Panicked(node, p))
			panic(p)
		}
	}()
	return fn(ctx, requestID)
}
