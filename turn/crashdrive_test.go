package turn_test

import (
	"strings"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/journaltest"
	"github.com/kindgi/agents/turn"
)

// crashDrive is one crash scenario: msg asked as run runID, its first
// Invoke through bindings that crash after a number of writes, then drives
// from fresh bindings — as a new process would, once the dead driver's
// lease expired — until the run completes, deciding its approval
// (approvalID) once asked. The tool runs are the fixture's tool log.
type crashDrive struct {
	f          *fixture
	b          turn.Bindings     // the scenario's bindings over f's store
	provider   bindings.Provider // answers every drive
	msg, runID string
	agent      agent.Agent // what each Resume names (zero: the run's own)
	approvalID string      // decided once asked; "" when the turn asks none
}

// fresh is the bindings of a process that did not crash: b with the
// scenario's provider and no event handler.
func (c crashDrive) fresh() turn.Bindings {
	fresh := c.b
	fresh.Providers = bindings.Providers{c.provider}
	fresh.OnEvent = nil
	return fresh
}

// run drives the scenario, crashing after allowed writes (never when
// negative) in panics' mode, behind the store's own Driver with oneStore
// (crashBindings), to completion, and returns its result, how many drives
// it took, and what it left, in the form the crash tests compare.
func (c crashDrive) run(t *testing.T, allowed int, panics, oneStore bool) crashOutcome {
	t.Helper()
	crasher := journaltest.New(allowed, panics)
	fresh := c.fresh()
	b := crashBindings(crasher, c.f.store, fresh, oneStore)
	in := c.f.input(c.msg)
	in.RunID = c.runID
	drives := 0
	attempt := func(fn func(turn.Bindings) (turn.Result, error)) (turn.Result, error) {
		drives++
		return survive(func() (turn.Result, error) { return fn(b) })
	}
	invoke := func(b turn.Bindings) (turn.Result, error) { return turn.Invoke(t.Context(), in, b) }
	resume := func(b turn.Bindings) (turn.Result, error) {
		return turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: c.runID, Agent: c.agent}, b)
	}
	asks := c.approvalID != ""
	res, err := attempt(invoke)
	for i := 0; ; i++ {
		if i > 12 {
			t.Fatalf("allowed %d: the run did not complete: last %+v, %v", allowed, res, err)
		}
		if crasher.Crashed() && b.Runs != fresh.Runs {
			// A new process: the dead driver's lease expires first.
			b = fresh
			c.f.clock.Advance(10 * time.Minute)
		}
		if err == nil && res.Status == turn.StatusCompleted {
			break
		}
		if asks {
			if a, aerr := c.f.store.GetApproval(t.Context(), tenant, c.approvalID); aerr == nil && a.Status == bindings.ApprovalPending {
				c.f.decide([]bindings.ApprovalRequest{a.Request}, true)
			}
		}
		code := agents.CodeOf(err)
		if code == agents.CodeRunJournalUnavailable || code == agents.CodeRunSnapshotMissing {
			// The crash came before the run was started: retry the
			// Invoke with its run id.
			res, err = attempt(invoke)
			continue
		}
		if err != nil && (code != agents.CodeHitlRequired || !asks) && code != agents.CodePersistence && !strings.HasPrefix(err.Error(), "crashed") {
			t.Fatalf("allowed %d: unexpected error %v", allowed, err)
		}
		res, err = attempt(resume)
	}
	if run, err := c.f.store.GetRun(t.Context(), tenant, c.runID); err != nil || run.Status != bindings.RunCompleted {
		t.Errorf("allowed %d: run = %+v, %v; want status completed", allowed, run, err)
	}
	lines := journalLines(t, c.f, c.runID)
	return crashOutcome{
		result: normalizeResult(res), messages: normalizeMessages(c.f.messages()), journal: lines,
		toolRuns: c.f.log.runs(), drives: drives, failedOp: crasher.FailedOp(), writes: crasher.Writes(),
	}
}
