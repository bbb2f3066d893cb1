package turn

import (
	"context"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/turn/internal/codes"
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

// step runs a node's side effect at most once per run (drive.Step of an
// effect): it is the only way the turn performs one.
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
	if _, ok := any((*T)(nil)).(*toolResult); ok {
		// A tool's output invokeTool checked already is journaled as it
		// is (encodeOptions).
		call := fn
		fn = func(ctx context.Context, requestID string) (T, error) {
			out, err := call(ctx, requestID)
			r.EncodeWith(encodeOptions(&out))
			return out, err
		}
	}
	return drive.Step(ctx, &r.Journal, key, node, drive.Effect, fn)
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
	return drive.Step(ctx, &r.Journal, key, node, drive.Decide, fn)
}

// The turn's side of drive.Step (drive.Steps): what a step that runs
// reads first, what a panic in it counts as, and its events and logs.

// Prepare decodes the initial messages a replay left undecoded
// (loadMessages): a step that runs may read them.
func (r *run) Prepare() error { return r.loadMessages() }

// Panicked is the error a panic p in a step of node counts as (an attempt
// of the step: drive.Journal.NoteAttempt).
func (r *run) Panicked(node string, p any) error {
	k := codes.PanicTool
	switch node {
	case NodeModelCall:
		k = codes.PanicModel
	case NodeEvaluateGuardrails:
		k = codes.PanicGuardrail
	}
	return codes.Panicked(k, r.s.Route.Provider, r.s.Route.Model, p)
}

// Started emits a step's NodeStartedEvent.
func (r *run) Started(ctx context.Context, key, node string) {
	emit(r, ctx, NodeStartedEvent{RunID: r.id, Node: node, Key: key})
}

// Ended logs a step's end and emits its NodeCompletedEvent.
func (r *run) Ended(ctx context.Context, key, node string, start time.Time, out any, err error) {
	r.logger.Step(ctx, key, node, start, out, err)
	if r.b.OnEvent != nil {
		emit(r, ctx, NodeCompletedEvent{RunID: r.id, Node: node, Key: key, Code: agents.CodeOf(err)})
	}
}

// Replayed logs a step's replay.
func (r *run) Replayed(ctx context.Context, key, node string, status string) {
	r.logger.Replayed(ctx, key, node, status)
}

// logReplayed logs the replay of a step that drive.Step does not replay.
func (r *run) logReplayed(ctx context.Context, key, node string, status string) {
	r.logger.Replayed(ctx, key, node, status)
}

// final reports whether err is a step's own outcome, to be journaled as
// failed (codes.StepOutcome): a quota wait is not.
func final(ctx context.Context, err error) bool {
	return !isQuotaWait(err) && codes.StepOutcome(ctx, err)
}

// Final is final, for the drive's journal (drive.Flow).
func (r *run) Final(ctx context.Context, err error) bool { return final(ctx, err) }
