package journaltest

import (
	"strings"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn"
)

// CrashDrive is the drive loop of a crash scenario: its first Invoke goes
// through Crashing (bindings behind Crasher); once Crasher has crashed,
// every later drive goes through Fresh — as a new process would, once the
// dead driver's lease expired — until the run completes.
type CrashDrive struct {
	Crasher  *Crasher
	Crashing turn.Bindings // the first process's bindings, behind Crasher
	Fresh    turn.Bindings // the bindings of a process that did not crash
	Input    turn.Input    // the turn, with its RunID
	Agent    agent.Agent   // what each Resume names (zero: the run's own)
	// Store is where the run and its approval are read, bypassing Crasher.
	Store interface {
		bindings.RunBinding
		bindings.HitlBinding
	}
	// Clock is advanced past the dead driver's lease when the new process
	// takes over.
	Clock interface{ Advance(time.Duration) }
	// ApprovalID is decided, by Approve, whenever it is pending; "" when
	// the turn asks none.
	ApprovalID string
	Approve    func(bindings.Approval)
}

// Run drives the scenario (allowed names it in failures) to completion and
// returns its last result and how many drives it took. A drive that
// crashed before the run started is retried as an Invoke, any other as a
// Resume; t fails on an error a crash does not explain, after 13 drives
// without completion, and unless the stored run ends completed.
func (d CrashDrive) Run(t testing.TB, allowed int) (turn.Result, int) {
	t.Helper()
	ctx := t.Context()
	b := d.Crashing
	drives := 0
	attempt := func(resume bool) (turn.Result, error) {
		drives++
		return Survive(func() (turn.Result, error) {
			if resume {
				return turn.Resume(ctx, turn.ResumeInput{TenantID: d.Input.TenantID, RunID: d.Input.RunID, Agent: d.Agent}, b)
			}
			return turn.Invoke(ctx, d.Input, b)
		})
	}
	asks := d.ApprovalID != ""
	res, err := attempt(false)
	for i := 0; ; i++ {
		if i > 12 {
			t.Fatalf("allowed %d: the run did not complete: last %+v, %v", allowed, res, err)
		}
		if d.Crasher.Crashed() && b.Runs != d.Fresh.Runs {
			// A new process: the dead driver's lease expires first.
			b = d.Fresh
			d.Clock.Advance(10 * time.Minute)
		}
		if err == nil && res.Status == turn.StatusCompleted {
			break
		}
		if asks {
			if a, aerr := d.Store.GetApproval(ctx, d.Input.TenantID, d.ApprovalID); aerr == nil && a.Status == bindings.ApprovalPending {
				d.Approve(a)
			}
		}
		code := agents.CodeOf(err)
		if code == agents.CodeRunJournalUnavailable || code == agents.CodeRunSnapshotMissing {
			// The crash came before the run was started: retry the
			// Invoke with its run id.
			res, err = attempt(false)
			continue
		}
		if err != nil && (code != agents.CodeHitlRequired || !asks) && code != agents.CodePersistence && !strings.HasPrefix(err.Error(), "crashed") {
			t.Fatalf("allowed %d: unexpected error %v", allowed, err)
		}
		res, err = attempt(true)
	}
	if run, err := d.Store.GetRun(ctx, d.Input.TenantID, d.Input.RunID); err != nil || run.Status != bindings.RunCompleted {
		t.Errorf("allowed %d: run = %+v, %v; want status completed", allowed, run, err)
	}
	return res, drives
}
