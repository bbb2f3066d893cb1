package pgstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/journaltest"
	"github.com/kindgi/agents/internal/storeio"
	"github.com/kindgi/agents/turn"
)

// resumeFixture is a turnFixture whose tool is gated (always_ask) and, when
// gate is set, waits in its call for gate to close after telling inTool.
type resumeFixture struct {
	*turnFixture
	a      agent.Agent
	gate   chan struct{}
	inTool chan struct{}
}

func newResumeFixture(t *testing.T, gated bool) *resumeFixture {
	t.Helper()
	f := &resumeFixture{turnFixture: newTurnFixture(t, New(testPool(t), nil)), a: lookupAgent(t, agent.GateAlwaysAsk)}
	if gated {
		f.gate, f.inTool = make(chan struct{}), make(chan struct{}, 1)
		f.holdLookup(t, f.inTool, f.gate)
	}
	return f
}

// resumeBindings are the Store's bindings for a turn parked on an approval
// that waits an hour.
func (f *resumeFixture) resumeBindings() turn.Bindings {
	b := f.bindings()
	b.Providers = bindings.Providers{answerModel{}}
	hour := time.Hour.Milliseconds()
	b.TenantPolicy = &bindings.TenantPolicy{Hitl: &bindings.HitlSpec{MaxTimeoutMs: &hour, OnTimeout: turn.OnTimeoutDeny}}
	return b
}

// parkApproved invokes a turn that parks on its tool call and approves the
// call: the run to resume.
func (f *resumeFixture) parkApproved(t testing.TB) string {
	t.Helper()
	ctx := t.Context()
	res, err := f.invoke(ctx, f.resumeBindings(), f.a, f.open(t, f.a))
	if err != nil || res.Status != turn.StatusSuspended || len(res.Approvals) != 1 {
		t.Fatalf("Invoke = %+v, %v; want one approval pending", res, err)
	}
	if _, err := f.store.ResolveApproval(ctx, turnTenant, res.Approvals[0].ID, bindings.ApprovalDecision{Approved: true, Reviewer: "rev"}); err != nil {
		t.Fatal(err)
	}
	return res.RunID
}

// runState is what the store holds of a run: the run (status, lease,
// updated_at), its journal and its approvals.
type runState struct {
	Run       bindings.Run
	Journal   []bindings.JournalEntry
	Approvals []bindings.Approval
}

func (f *resumeFixture) state(t *testing.T, run string) runState {
	t.Helper()
	res, err := f.store.resumeRun(t.Context(), storeio.ReopenRunInput{TenantID: turnTenant, RunID: run, Held: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.store.GetRun(t.Context(), turnTenant, run)
	if err != nil {
		t.Fatal(err)
	}
	return runState{Run: r, Journal: res.Journal, Approvals: res.Approvals}
}

func (f *resumeFixture) resume(ctx context.Context, b turn.Bindings, run string) (turn.Result, error) {
	return turn.Resume(ctx, turn.ResumeInput{TenantID: turnTenant, RunID: run, Agent: f.a}, b)
}

// resumeToEnd resumes run with b and fails t unless the run completes.
func (f *resumeFixture) resumeToEnd(t testing.TB, ctx context.Context, b turn.Bindings, run string) {
	t.Helper()
	f.resumeToEndAs(t, "Resume", ctx, b, run)
}

// resumeToEndAs is resumeToEnd, what naming the Resume in the failure.
func (f *resumeFixture) resumeToEndAs(t testing.TB, what string, ctx context.Context, b turn.Bindings, run string) {
	t.Helper()
	if res, err := f.resume(ctx, b, run); err != nil || res.Status != turn.StatusCompleted {
		t.Fatalf("%s = %+v, %v", what, res.Status, err)
	}
}

// TestResumeTakesItsLeaseWithItsFirstWrite resumes a parked turn on the
// Store: the reopen's round trip writes
// nothing, so a Resume commits one transaction fewer than it makes round
// trips, and the run completes with its approved call run once.
func TestResumeTakesItsLeaseWithItsFirstWrite(t *testing.T) {
	pool, rt := tracedPool(t, 1)
	f := &resumeFixture{turnFixture: newTurnFixture(t, New(pool, nil)), a: lookupAgent(t, agent.GateAlwaysAsk)}
	run := f.parkApproved(t)
	rt.reset()
	f.resumeToEnd(t, t.Context(), f.resumeBindings(), run)
	queries, batches, _, _ := rt.snapshot()
	_, commits := rt.statements()
	if trips := queries + batches; trips > maxResumeRoundTrips || commits != trips-1 {
		t.Fatalf("Resume took %d round trips and %d commits; want at most %d, and the reopen's read-only", trips, commits, maxResumeRoundTrips)
	}
	f.ranOnce(t, "the approved tool")
}

// TestCrashAfterTheReadOnlyResumeLeavesTheRunAsParked crashes a Resume at
// its first write, the one that takes the run's lease (the reopen before
// it only read): the run is exactly as parked — its status, lease,
// journal and approvals — and a Resume after the crash completes it, the
// approved call run once.
func TestCrashAfterTheReadOnlyResumeLeavesTheRunAsParked(t *testing.T) {
	for _, panics := range []bool{false, true} {
		f := newResumeFixture(t, false)
		run := f.parkApproved(t)
		parked := f.state(t, run)
		crasher := journaltest.New(0, panics)
		b := crashedBindings(f.resumeBindings(), crasher, f.store)
		failsAtTheCrash(t, panics, "Resume", func() (turn.Result, error) { return f.resume(t.Context(), b, run) })
		if op := crasher.FailedOp(); !strings.HasPrefix(op, "Commit [") || !strings.Contains(op, "dispatch-tools/call_1 started") {
			t.Fatalf("crashed at %q, want the approved call's started entry (the first write)", op)
		}
		if d := cmp.Diff(parked, f.state(t, run)); d != "" {
			t.Fatalf("the run after the crash is not as parked (-parked +now):\n%s", d)
		}
		if n := f.executed.Load(); n != 0 {
			t.Fatalf("the tool ran %d times before the first write", n)
		}
		f.resumeToEndAs(t, "Resume after the crash", t.Context(), f.resumeBindings(), run)
		f.ranOnce(t, "the tool")
	}
}

// TestConcurrentResumesOfOneRun resumes one parked run twice: the second
// Resume runs between the first one's read (from its TurnStartedEvent,
// which comes after the read) and its first write, to its end or until it
// holds the lease inside the tool call. Exactly one drives the run: the
// first one's write finds the run changed and stores nothing, its Resume
// is run-busy, and the tool runs once.
func TestConcurrentResumesOfOneRun(t *testing.T) {
	for _, hold := range []bool{false, true} {
		f := newResumeFixture(t, hold)
		run := f.parkApproved(t)
		var (
			otherRes turn.Result
			otherErr error
			inTool   chan struct{} // nil without hold: the first waits for the other's end
		)
		if hold {
			inTool = f.inTool
		}
		b := f.resumeBindings()
		wait := interleaveAtStart(&b, func() {
			otherRes, otherErr = f.resume(context.Background(), f.resumeBindings(), run)
		}, inTool)
		_, err := f.resume(t.Context(), b, run)
		if hold {
			if r, gerr := f.store.GetRun(t.Context(), turnTenant, run); gerr != nil || r.LeaseOwner == "" {
				t.Errorf("hold: run %+v, %v; want it still leased to the other Resume", r, gerr)
			}
			close(f.gate)
		}
		if !wait() {
			t.Fatal("the first Resume started no drive")
		}
		if otherErr != nil || otherRes.Status != turn.StatusCompleted {
			t.Fatalf("hold %v: the other Resume = %+v, %v", hold, otherRes.Status, otherErr)
		}
		if agents.CodeOf(err) != agents.CodeRunBusy {
			t.Fatalf("hold %v: the first Resume = %v (code %q), want run-busy", hold, err, agents.CodeOf(err))
		}
		f.ranOnce(t, fmt.Sprintf("hold %v: the tool", hold))
		if r, err := f.store.GetRun(t.Context(), turnTenant, run); err != nil || r.Status != bindings.RunCompleted || r.LeaseOwner != "" {
			t.Fatalf("hold %v: run %+v, %v; want it completed, its lease released", hold, r, err)
		}
	}
}

// TestResumesOfOneRunAtOnce resumes one parked run from four goroutines
// at once: every Resume completes (the one that drove it, or one that read
// it finished and returns its recorded result) or is run-busy, and the
// tool runs once.
func TestResumesOfOneRunAtOnce(t *testing.T) {
	f := newResumeFixture(t, false)
	run := f.parkApproved(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var res turn.Result
			res, errs[i] = f.resume(context.Background(), f.resumeBindings(), run)
			if errs[i] == nil && res.Status != turn.StatusCompleted {
				errs[i] = &agents.PersistenceError{Op: "resume", Err: context.Canceled}
			}
		}()
	}
	wg.Wait()
	completed := 0
	for _, err := range errs {
		switch agents.CodeOf(err) {
		case "":
			completed++
		case agents.CodeRunBusy:
		default:
			t.Errorf("Resume: %v", err)
		}
	}
	if completed == 0 {
		t.Fatalf("no Resume completed: %v", errs)
	}
	f.ranOnce(t, "the tool")
}

// TestResumeRacingALeaseHolder lets another owner (a worker's claim, say)
// take the run's lease between a Resume's read and its first write: the
// Resume is run-busy and stores nothing, the lease stays the holder's, and
// once it is released a Resume completes the run.
func TestResumeRacingALeaseHolder(t *testing.T) {
	f := newResumeFixture(t, false)
	run := f.parkApproved(t)
	var held runState
	b := f.resumeBindings()
	b.OnEvent = func(ctx context.Context, e turn.Event) {
		if _, ok := e.(turn.TurnStartedEvent); !ok {
			return
		}
		if _, err := f.store.AcquireLease(ctx, bindings.LeaseInput{TenantID: turnTenant, RunID: run, Owner: "worker-1", TTL: time.Minute}); err != nil {
			t.Error(err)
		}
		held = f.state(t, run)
	}
	_, err := f.resume(t.Context(), b, run)
	if agents.CodeOf(err) != agents.CodeRunBusy {
		t.Fatalf("Resume = %v (code %q), want run-busy", err, agents.CodeOf(err))
	}
	if held.Run.LeaseOwner != "worker-1" {
		t.Fatalf("the lease was not taken: %+v", held.Run)
	}
	if d := cmp.Diff(held, f.state(t, run)); d != "" {
		t.Fatalf("the refused Resume changed the run (-held +now):\n%s", d)
	}
	if n := f.executed.Load(); n != 0 {
		t.Fatalf("the tool ran %d times", n)
	}
	// While the holder holds it, a Resume is refused at its read.
	if _, err := f.resume(t.Context(), f.resumeBindings(), run); agents.CodeOf(err) != agents.CodeRunBusy {
		t.Fatalf("Resume while the lease is held = %v, want run-busy", err)
	}
	if err := f.store.ReleaseLease(t.Context(), turnTenant, run, "worker-1"); err != nil {
		t.Fatal(err)
	}
	f.resumeToEndAs(t, "Resume after the release", t.Context(), f.resumeBindings(), run)
	f.ranOnce(t, "the tool")
}
