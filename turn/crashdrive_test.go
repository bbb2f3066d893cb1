package turn_test

import (
	"strings"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/journaltest"
	"github.com/kindgi/agents/turn"
)

// crashDrive is one crash scenario's run: its first Invoke through
// crashing bindings, then drives from fresh bindings — as a new process
// would, once the dead driver's lease expired — until the run completes,
// deciding its approval (approvalID) once asked. The tool runs are the
// fixture's tool log.
type crashDrive struct {
	f          *fixture
	crasher    *journaltest.Crasher
	wrapped    turn.Bindings // the first drive's bindings, behind crasher
	fresh      turn.Bindings // the bindings of a process that did not crash
	in         turn.Input    // in.RunID set
	resume     turn.ResumeInput
	approvalID string
}

// run drives the scenario to completion and returns its result, how many
// drives it took, and what it left, in the form the crash tests compare.
func (c crashDrive) run(t *testing.T, allowed int) crashOutcome {
	t.Helper()
	b := c.wrapped
	drives := 0
	attempt := func(fn func(turn.Bindings) (turn.Result, error)) (turn.Result, error) {
		drives++
		return survive(func() (turn.Result, error) { return fn(b) })
	}
	invoke := func(b turn.Bindings) (turn.Result, error) { return turn.Invoke(t.Context(), c.in, b) }
	resume := func(b turn.Bindings) (turn.Result, error) { return turn.Resume(t.Context(), c.resume, b) }
	res, err := attempt(invoke)
	for i := 0; ; i++ {
		if i > 12 {
			t.Fatalf("allowed %d: the run did not complete: last %+v, %v", allowed, res, err)
		}
		if c.crasher.Crashed() && b.Runs != c.fresh.Runs {
			// A new process: the dead driver's lease expires first.
			b = c.fresh
			c.f.clock.Advance(10 * time.Minute)
		}
		if err == nil && res.Status == turn.StatusCompleted {
			break
		}
		if a, aerr := c.f.store.GetApproval(t.Context(), tenant, c.approvalID); aerr == nil && a.Status == bindings.ApprovalPending {
			c.f.decide([]bindings.ApprovalRequest{a.Request}, true)
		}
		code := agents.CodeOf(err)
		if code == agents.CodeRunJournalUnavailable || code == agents.CodeRunSnapshotMissing {
			// The crash came before the run was started: retry the
			// Invoke with its run id.
			res, err = attempt(invoke)
			continue
		}
		if err != nil && code != agents.CodeHitlRequired && code != agents.CodePersistence && !strings.HasPrefix(err.Error(), "crashed") {
			t.Fatalf("allowed %d: unexpected error %v", allowed, err)
		}
		res, err = attempt(resume)
	}
	if run, err := c.f.store.GetRun(t.Context(), tenant, c.in.RunID); err != nil || run.Status != bindings.RunCompleted {
		t.Errorf("allowed %d: run = %+v, %v; want status completed", allowed, run, err)
	}
	lines := journalLines(t, c.f, c.in.RunID)
	return crashOutcome{
		result: normalizeResult(res), messages: normalizeMessages(c.f.messages()), journal: lines,
		toolRuns: c.f.log.runs(), drives: drives, failedOp: c.crasher.FailedOp(), writes: c.crasher.Writes(),
	}
}
