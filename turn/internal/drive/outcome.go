package drive

import (
	"context"
	"errors"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/codes"
)

// How a drive ends, as its journal records it: a finished run's status put
// right (Finished), a completed or parked drive's last Commit (Complete),
// a failed drive's error sorted into the run's outcome or a resumable stop
// (Outcome), and what each then writes (EndFailed, EndOrRelease, Leave).

// Finished makes a finished run's status, status when the drive took it,
// say how its outcome e (the compose-result entry) ended: a driver may
// have died between the outcome and the status. The status and the lease
// released go in one Commit; held reports that the lease is still to be
// released, once the outcome is returned.
func (j *Journal) Finished(ctx context.Context, e *bindings.JournalEntry, status bindings.RunStatus) (held bool, err error) {
	want := bindings.RunCompleted
	if e.Status == bindings.StepFailed {
		want = bindings.RunFailed
	}
	if status == want {
		return true, nil
	}
	if err := j.Finish(ctx, want); err != nil {
		j.ReleaseLease(ctx)
		return false, Coded(err, "set run status")
	}
	return false, nil
}

// Complete ends a drive whose flow returned with the run's status (End).
// When that write fails, final reports that its refusal is the run's
// outcome (the deferred final message refused, its failure journaled; or
// a refusal for good of a buffered result); otherwise the run is left
// resumable: the attempt of a model or tool step whose result rode with
// the write is counted (Bindings.MaxStepAttempts) and the lease released.
func (j *Journal) Complete(ctx context.Context, status bindings.RunStatus) (final bool, err error) {
	err = j.End(ctx, status, nil)
	if err == nil || j.Failed || codes.EndsRun(err) {
		return err != nil, err
	}
	if j.Inflight != "" && agents.CodeOf(err) != agents.CodeRunBusy {
		j.NoteAttempt(ctx, err)
	}
	j.ReleaseLease(ctx)
	return false, err
}

// Outcome sorts the error err of a failed drive under parent: the error
// to report, and whether it is the run's outcome (terminal) or leaves the
// run resumable. A cancellation whose cause is stopped (a stopping
// Worker's) is not the turn's outcome; any other cancellation of parent
// is, as turn-aborted (external). A lost lease is run-busy, resumable.
// wall, when set, is the drive's wall-clock budget, whose cause wallErr
// makes a turn-aborted (timeout) outcome. A deterministic refusal, one
// the store would give on every drive (codes.EndsRun), is the outcome too.
// A terminal refusal drops the buffered results, which the failure is
// then written without (a failed run replays its error without folding
// the journal).
func (j *Journal) Outcome(parent context.Context, err, stopped error, wall context.Context, wallErr error) (error, bool) {
	terminal := j.Failed
	switch {
	case parent.Err() != nil && !j.Failed && errors.Is(context.Cause(parent), stopped):
		// The run is left as it is, its lease released, for another
		// worker to claim at once.
		err = &agents.TurnAbortedError{Reason: agents.AbortExternal, Err: stopped}
	case parent.Err() != nil:
		err = &agents.TurnAbortedError{Reason: agents.AbortExternal, Err: parent.Err()}
		terminal = true
	case j.LeaseLost():
		err = &agents.RunBusyError{RunID: j.runID}
		terminal = false
	case wall != nil && errors.Is(context.Cause(wall), wallErr):
		err = &agents.TurnAbortedError{Reason: agents.AbortTimeout, Err: wallErr}
		terminal = true
	case !terminal && codes.EndsRun(err):
		terminal = true
		j.DropBuffer()
	}
	if terminal && agents.CodeOf(err) == agents.CodePersistence {
		// The store refused a write for good, perhaps of a buffered
		// result.
		j.DropBuffer()
	}
	return err, terminal
}

// EndFailed ends the run failed, with err journaled as the failed outcome
// of key (its node too); when that write fails the lease is released.
func (j *Journal) EndFailed(ctx context.Context, key string, err error) {
	se, detail := EncodeFailure(err)
	j.EndOrRelease(ctx, bindings.RunFailed, &bindings.JournalEntry{Key: key, Node: key, Status: bindings.StepFailed, Output: detail, Error: se})
}

// EndOrRelease is End, releasing the lease when End fails.
func (j *Journal) EndOrRelease(ctx context.Context, status bindings.RunStatus, last *bindings.JournalEntry) {
	if j.End(ctx, status, last) != nil {
		j.ReleaseLease(ctx)
	}
}

// Leave ends a drive that leaves the run unfinished after err, to be
// resumed: an effect's result still buffered is kept if it can be, the
// attempt of a model or tool step that ends without a result is counted
// (Bindings.MaxStepAttempts), and the lease is released unless held (a
// Worker's claimed run, which it holds for the retry).
func (j *Journal) Leave(ctx context.Context, err error, held bool) {
	if j.Carried() {
		_ = j.Flush(ctx)
	}
	if j.Inflight != "" && agents.CodeOf(err) != agents.CodeRunBusy && !codes.IsDriverFault(err) {
		j.NoteAttempt(ctx, err)
	}
	if !held {
		j.ReleaseLease(ctx)
	}
}
