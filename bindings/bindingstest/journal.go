package bindingstest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// RunJournalTests checks a RunBinding: starting runs, idempotent appends
// per (run, key, phase), journal order, run status, and the lease that
// makes one driver per run (exactly one of many concurrent acquirers wins,
// an expired lease can be taken, appends are guarded by the owner).
func RunJournalTests(t *testing.T, newHarness NewHarness) {
	t.Helper()
	runSuite(t, newHarness, "RunBinding", func(h Harness) bool { return h.Runs != nil }, journalCases)
}

var journalCases = []testCase{
	{name: "StartRunCreatesARunningRunLeasedToItsOwner", run: testStartRun},
	{name: "StartRunLeaseExpiresAfterTTL", clock: true, run: testStartRunLeaseExpiry},
	{name: "StartRunOfARunHeldByAnotherIsBusy", run: testStartRunBusy},
	{name: "StartRunAgainBySameOwnerKeepsStatus", run: testStartRunSameOwner},
	{name: "StartRunAfterLeaseExpiryTakesTheLease", clock: true, run: testStartRunExpired},
	{name: "StartRunRequiresTenantAndRunID", run: testStartRunValidates},
	{name: "UnknownRunIsJournalUnavailableForEveryMethod", run: testRunUnknown},
	{name: "ReadJournalOfANewRunIsEmpty", run: testReadJournalEmpty},
	{name: "AppendAssignsIncreasingSeqAndReadsInAppendOrder", run: testAppendOrder},
	{name: "AppendIsIdempotentPerKeyAndPhase", run: testAppendIdempotentPhase},
	{name: "ConcurrentAppendsOfOneKeyStoreOne", run: testAppendConcurrentSameKey},
	{name: "AppendWithZeroAtUsesNow", clock: true, run: testAppendStepNow},
	{name: "AppendByAnotherOwnerIsBusyAndStoresNothing", run: testAppendOwnerGuard},
	{name: "AppendByFormerOwnerAfterTakeoverIsBusy", clock: true, run: testAppendFormerOwner},
	{name: "AppendAfterOwnLeaseExpiredSaysSo", clock: true, run: testAppendOwnLeaseExpired},
	{name: "SetRunStatusChangesStatus", run: testSetRunStatus},
	{name: "SetRunStatusRejectsUnknownStatus", run: testSetRunStatusInvalid},
	{name: "AcquireLeaseBySameOwnerRenews", clock: true, run: testLeaseRenew},
	{name: "AcquireLeaseHeldByAnotherIsBusy", run: testLeaseBusy},
	{name: "AcquireExpiredLeaseSucceeds", clock: true, run: testLeaseExpired},
	{name: "ExactlyOneConcurrentAcquirerOfAFreeLeaseWins", run: testLeaseRace},
	{name: "ExactlyOneConcurrentAcquirerOfAnExpiredLeaseWins", clock: true, run: testLeaseRaceExpired},
	{name: "ReleaseLeaseByNonOwnerIsNoOp", run: testReleaseNonOwner},
	{name: "ReleaseLeaseFreesIt", run: testReleaseFrees},
	{name: "TenantIsolation", run: testRunTenantIsolation},
	{name: "ReturnedValuesAreCopies", run: testRunCopies},
	{name: "CancelledContextFails", run: testRunCancelled},
}

const leaseTTL = time.Minute

func (f *fixture) startRun(t *testing.T, tenant, run, owner string) bindings.Run {
	t.Helper()
	return mustReturn(f.Runs.StartRun(f.ctx, bindings.StartRunInput{TenantID: tenant, RunID: run, FlowID: "agent.turn", FlowVersion: "1.1.0", Owner: owner, LeaseTTL: leaseTTL}))(t, "StartRun")
}

func (f *fixture) getRun(t *testing.T, tenant, run string) bindings.Run {
	t.Helper()
	return mustReturn(f.Runs.GetRun(f.ctx, tenant, run))(t, "GetRun")
}

// wantRun fails t unless run is stored with status, leased to owner.
func (f *fixture) wantRun(t *testing.T, what, tenant, run string, status bindings.RunStatus, owner string) {
	t.Helper()
	if r := f.getRun(t, tenant, run); r.Status != status || r.LeaseOwner != owner {
		t.Fatalf("run %s = %+v, want %s and leased to %q", what, r, status, owner)
	}
}

// wantNoRun fails t unless every method of the RunBinding, called by
// owner on run as tenant, is run-journal-unavailable (what ends each
// call's name in the message).
func (f *fixture) wantNoRun(t *testing.T, what, tenant, run, owner string) {
	t.Helper()
	_, err := f.Runs.GetRun(f.ctx, tenant, run)
	wantCode(t, "GetRun"+what, err, agents.CodeRunJournalUnavailable)
	_, err = f.Runs.ReadJournal(f.ctx, tenant, run)
	wantCode(t, "ReadJournal"+what, err, agents.CodeRunJournalUnavailable)
	_, _, err = f.Runs.AppendStep(f.ctx, bindings.AppendStepInput{TenantID: tenant, RunID: run, Entry: bindings.JournalEntry{Key: "setup", Node: "setup", Status: bindings.StepStarted}})
	wantCode(t, "AppendStep"+what, err, agents.CodeRunJournalUnavailable)
	wantCode(t, "SetRunStatus"+what, f.Runs.SetRunStatus(f.ctx, tenant, run, bindings.RunFailed), agents.CodeRunJournalUnavailable)
	_, err = f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: tenant, RunID: run, Owner: owner, TTL: leaseTTL})
	wantCode(t, "AcquireLease"+what, err, agents.CodeRunJournalUnavailable)
	wantCode(t, "ReleaseLease"+what, f.Runs.ReleaseLease(f.ctx, tenant, run, owner), agents.CodeRunJournalUnavailable)
}

func (f *fixture) step(t *testing.T, tenant, run, owner, key string, status bindings.StepStatus) (bindings.JournalEntry, bool) {
	t.Helper()
	e, appended, err := f.Runs.AppendStep(f.ctx, bindings.AppendStepInput{TenantID: tenant, RunID: run, Owner: owner, Entry: bindings.JournalEntry{
		Key: key, Node: nodeOf(key), Status: status, Output: json.RawMessage(fmt.Sprintf(`{"key":%q,"status":%q}`, key, status)), At: at(1),
	}})
	must(t, "AppendStep "+key+" "+string(status), err)
	return e, appended
}

func (f *fixture) journal(t *testing.T, tenant, run string) []bindings.JournalEntry {
	t.Helper()
	return mustReturn(f.Runs.ReadJournal(f.ctx, tenant, run))(t, "ReadJournal")
}

func nodeOf(key string) string {
	for i := range len(key) {
		if key[i] == '/' {
			return key[:i]
		}
	}
	return key
}

func testStartRun(t *testing.T, f *fixture) {
	a := f.tenant("a")
	r := f.startRun(t, a, "run-1", "worker-1")
	want := bindings.Run{TenantID: a, ID: "run-1", FlowID: "agent.turn", FlowVersion: "1.1.0", Status: bindings.RunRunning,
		LeaseOwner: "worker-1", LeaseExpiresAt: r.LeaseExpiresAt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	diff(t, "started run", r, want)
	if r.LeaseExpiresAt.IsZero() || r.CreatedAt.IsZero() {
		t.Fatalf("started run has no lease expiry or creation time: %+v", r)
	}
	diff(t, "read back", f.getRun(t, a, "run-1"), r)
}

func testStartRunLeaseExpiry(t *testing.T, f *fixture) {
	a := f.tenant("a")
	r := f.startRun(t, a, "run-1", "worker-1")
	if want := f.Clock.Now().Add(leaseTTL); !r.LeaseExpiresAt.Equal(want) {
		t.Fatalf("LeaseExpiresAt = %v, want now+TTL = %v", r.LeaseExpiresAt, want)
	}
	if !r.CreatedAt.Equal(f.Clock.Now()) {
		t.Fatalf("CreatedAt = %v, want the clock's now %v", r.CreatedAt, f.Clock.Now())
	}
}

func testStartRunBusy(t *testing.T, f *fixture) {
	a := f.tenant("a")
	r := f.startRun(t, a, "run-1", "worker-1")
	_, err := f.Runs.StartRun(f.ctx, bindings.StartRunInput{TenantID: a, RunID: "run-1", FlowID: "agent.turn", FlowVersion: "1.1.0", Owner: "worker-2", LeaseTTL: leaseTTL})
	wantCode(t, "StartRun by worker-2", err, agents.CodeRunBusy)
	diff(t, "run after refused start", f.getRun(t, a, "run-1"), r)
}

func testStartRunSameOwner(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	must(t, "SetRunStatus", f.Runs.SetRunStatus(f.ctx, a, "run-1", bindings.RunSuspended))
	f.step(t, a, "run-1", "", "setup", bindings.StepCompleted)
	r := f.startRun(t, a, "run-1", "worker-1")
	if r.Status != bindings.RunSuspended || r.LeaseOwner != "worker-1" {
		t.Fatalf("restarted run: status %q owner %q, want suspended and worker-1", r.Status, r.LeaseOwner)
	}
	diff(t, "journal kept", keys(f.journal(t, a, "run-1")), []string{"setup/completed"})
}

func testStartRunExpired(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	must(t, "SetRunStatus", f.Runs.SetRunStatus(f.ctx, a, "run-1", bindings.RunSuspended))
	f.Clock.Advance(leaseTTL + time.Second)
	r := f.startRun(t, a, "run-1", "worker-2")
	if r.LeaseOwner != "worker-2" || r.Status != bindings.RunSuspended {
		t.Fatalf("run started after expiry: owner %q status %q, want worker-2 and suspended", r.LeaseOwner, r.Status)
	}
	if want := f.Clock.Now().Add(leaseTTL); !r.LeaseExpiresAt.Equal(want) {
		t.Fatalf("LeaseExpiresAt = %v, want %v", r.LeaseExpiresAt, want)
	}
}

func testStartRunValidates(t *testing.T, f *fixture) {
	_, err := f.Runs.StartRun(f.ctx, bindings.StartRunInput{RunID: "run-1", FlowID: "agent.turn", Owner: "w", LeaseTTL: leaseTTL})
	wantCode(t, "no tenant", err, agents.CodeInvalidMessage)
	_, err = f.Runs.StartRun(f.ctx, bindings.StartRunInput{TenantID: f.tenant("a"), FlowID: "agent.turn", Owner: "w", LeaseTTL: leaseTTL})
	wantCode(t, "no run id", err, agents.CodeInvalidMessage)
}

func testRunUnknown(t *testing.T, f *fixture) {
	f.wantNoRun(t, "", f.tenant("a"), "missing", "w")
}

func testReadJournalEmpty(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	if es := f.journal(t, a, "run-1"); len(es) != 0 {
		t.Fatalf("new run has %d entries", len(es))
	}
}

func testAppendOrder(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	in := []bindings.JournalEntry{
		{Key: "setup", Node: "setup", Status: bindings.StepCompleted, Output: json.RawMessage(`{"runId":"run-1","tools":["a@1.0.0"]}`), At: at(1)},
		{Key: "agent-loop/0/model-call", Node: "model-call", Status: bindings.StepStarted, At: at(2)},
		{Key: "agent-loop/0/model-call", Node: "model-call", Status: bindings.StepCompleted, Output: json.RawMessage(`{"text":"hi"}`), At: at(3)},
		{Key: "agent-loop/0/dispatch-tools/call_1", Node: "dispatch-tools", Status: bindings.StepFailed, Error: &bindings.StepError{Code: "tool-invocation-failed", Message: "boom"}, At: at(4)},
		{Key: "agent-loop/0/dispatch-tools/call_2/approval", Node: "dispatch-tools", Status: bindings.StepParked, Output: json.RawMessage(`{"approvalId":"ap-1"}`), At: at(5)},
		{Key: "a-key-that-sorts-first", Node: "x", Status: bindings.StepCompleted, At: at(0)},
	}
	var want []bindings.JournalEntry
	var last int64
	for _, e := range in {
		got, appended, err := f.Runs.AppendStep(f.ctx, bindings.AppendStepInput{TenantID: a, RunID: "run-1", Owner: "worker-1", Entry: e})
		must(t, "AppendStep "+e.Key, err)
		if !appended {
			t.Fatalf("AppendStep %s %s: appended=false for a new (key, phase)", e.Key, e.Status)
		}
		if got.Seq <= last {
			t.Fatalf("entry %s has Seq %d after %d: want strictly increasing", e.Key, got.Seq, last)
		}
		last = got.Seq
		e.Seq = got.Seq
		diff(t, "returned entry", got, e)
		want = append(want, e)
	}
	diff(t, "journal", f.journal(t, a, "run-1"), want)
}

func testAppendIdempotentPhase(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	key := "agent-loop/1/dispatch-tools/call_1"
	// step appends key's entry of status and fails t with why unless it
	// was appended as wanted.
	step := func(key string, status bindings.StepStatus, appended bool, why string) bindings.JournalEntry {
		t.Helper()
		e, ok := f.step(t, a, "run-1", "worker-1", key, status)
		if ok != appended {
			t.Fatal(why)
		}
		return e
	}
	started := step(key, bindings.StepStarted, true, "first started entry not appended")
	again := step(key, bindings.StepStarted, false, "second started entry of the same key appended")
	diff(t, "second started returns the first", again, started)
	parked := step(key, bindings.StepParked, true, "parked entry not appended: parked is its own phase")
	completed := step(key, bindings.StepCompleted, true, "completed entry not appended after started and parked")
	failed := step(key, bindings.StepFailed, false, "failed entry appended after completed: both are the result phase")
	diff(t, "failed after completed returns the completed entry", failed, completed)
	other := step("agent-loop/1/dispatch-tools/call_2", bindings.StepCompleted, true, "another key's entry not appended")
	diff(t, "journal", f.journal(t, a, "run-1"), []bindings.JournalEntry{started, parked, completed, other})
}

func testAppendConcurrentSameKey(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	const n = 16
	entries := make([]bindings.JournalEntry, n)
	appended := make([]bool, n)
	errs := make([]error, n)
	concurrently(n, func(i int) {
		entries[i], appended[i], errs[i] = f.Runs.AppendStep(f.ctx, bindings.AppendStepInput{TenantID: a, RunID: "run-1", Entry: bindings.JournalEntry{
			Key: "agent-loop/0/model-call", Node: "model-call", Status: bindings.StepCompleted, Output: json.RawMessage(fmt.Sprintf(`{"writer":%d}`, i)), At: at(1),
		}})
	})
	wantOneWon(t, "append", "concurrent appends of one (key, phase) stored an entry", appended, errs)
	j := f.journal(t, a, "run-1")
	if len(j) != 1 {
		t.Fatalf("journal has %d entries, want 1", len(j))
	}
	for i := range n {
		diff(t, fmt.Sprintf("entry returned to writer %d", i), entries[i], j[0])
	}
}

func testAppendStepNow(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	f.Clock.Advance(time.Hour)
	e, _, err := f.Runs.AppendStep(f.ctx, bindings.AppendStepInput{TenantID: a, RunID: "run-1", Entry: bindings.JournalEntry{Key: "setup", Node: "setup", Status: bindings.StepStarted}})
	must(t, "AppendStep", err)
	if !e.At.Equal(f.Clock.Now()) {
		t.Fatalf("At = %v, want the clock's now %v", e.At, f.Clock.Now())
	}
}

func testAppendOwnerGuard(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	_, _, err := f.Runs.AppendStep(f.ctx, bindings.AppendStepInput{TenantID: a, RunID: "run-1", Owner: "worker-2", Entry: bindings.JournalEntry{Key: "setup", Node: "setup", Status: bindings.StepStarted}})
	wantCode(t, "append by worker-2", err, agents.CodeRunBusy)
	if es := f.journal(t, a, "run-1"); len(es) != 0 {
		t.Fatalf("a refused append stored %d entries", len(es))
	}
	f.step(t, a, "run-1", "worker-1", "setup", bindings.StepStarted)
	f.step(t, a, "run-1", "", "render-prompt", bindings.StepStarted) // no owner: unguarded
	diff(t, "journal", keys(f.journal(t, a, "run-1")), []string{"setup/started", "render-prompt/started"})
}

func testAppendFormerOwner(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	f.step(t, a, "run-1", "worker-1", "setup", bindings.StepCompleted)
	f.Clock.Advance(leaseTTL + time.Second)
	_, err := f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	must(t, "AcquireLease by worker-2", err)
	_, _, err = f.Runs.AppendStep(f.ctx, bindings.AppendStepInput{TenantID: a, RunID: "run-1", Owner: "worker-1", Entry: bindings.JournalEntry{Key: "render-prompt", Node: "render-prompt", Status: bindings.StepCompleted}})
	wantCode(t, "append by the former owner", err, agents.CodeRunBusy)
	f.step(t, a, "run-1", "worker-2", "render-prompt", bindings.StepCompleted)
	diff(t, "journal", keys(f.journal(t, a, "run-1")), []string{"setup/completed", "render-prompt/completed"})
}

func testSetRunStatus(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	for _, s := range []bindings.RunStatus{bindings.RunSuspended, bindings.RunRunning, bindings.RunFailed, bindings.RunCompleted} {
		must(t, "SetRunStatus "+string(s), f.Runs.SetRunStatus(f.ctx, a, "run-1", s))
		if got := f.getRun(t, a, "run-1").Status; got != s {
			t.Fatalf("status = %q after SetRunStatus(%q)", got, s)
		}
	}
}

func testSetRunStatusInvalid(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	wantCode(t, "SetRunStatus(bogus)", f.Runs.SetRunStatus(f.ctx, a, "run-1", "bogus"), agents.CodeInvalidMessage)
	if got := f.getRun(t, a, "run-1").Status; got != bindings.RunRunning {
		t.Fatalf("status = %q after a refused change, want running", got)
	}
}

func testLeaseRenew(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	f.Clock.Advance(leaseTTL / 2)
	r, err := f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "run-1", Owner: "worker-1", TTL: 2 * leaseTTL})
	must(t, "renew", err)
	if want := f.Clock.Now().Add(2 * leaseTTL); r.LeaseOwner != "worker-1" || !r.LeaseExpiresAt.Equal(want) {
		t.Fatalf("renewed lease: owner %q until %v, want worker-1 until %v", r.LeaseOwner, r.LeaseExpiresAt, want)
	}
	f.Clock.Advance(leaseTTL)
	_, err = f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	wantCode(t, "acquire by worker-2 within the renewed lease", err, agents.CodeRunBusy)
}

func testLeaseBusy(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	_, err := f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	wantCode(t, "AcquireLease by worker-2", err, agents.CodeRunBusy)
	var busy *agents.RunBusyError
	if !errors.As(err, &busy) || busy.RunID != "run-1" {
		t.Fatalf("error %v: want *agents.RunBusyError naming run-1", err)
	}
	if got := f.getRun(t, a, "run-1").LeaseOwner; got != "worker-1" {
		t.Fatalf("LeaseOwner = %q after a refused acquire, want worker-1", got)
	}
}

func testLeaseExpired(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	f.Clock.Advance(leaseTTL - time.Second)
	_, err := f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	wantCode(t, "acquire before expiry", err, agents.CodeRunBusy)
	f.Clock.Advance(2 * time.Second)
	r, err := f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	must(t, "acquire after expiry", err)
	if r.LeaseOwner != "worker-2" || !r.LeaseExpiresAt.Equal(f.Clock.Now().Add(leaseTTL)) {
		t.Fatalf("lease after takeover: %q until %v", r.LeaseOwner, r.LeaseExpiresAt)
	}
}

// race runs n concurrent acquirers of run-1 and checks exactly one wins
// and every other gets run-busy.
func (f *fixture) race(t *testing.T, tenant string) {
	t.Helper()
	runs := make([]bindings.Run, racers)
	winner := raceOne(t, "acquired the lease", func(i int, racer string) (err error) {
		runs[i], err = f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: tenant, RunID: "run-1", Owner: racer, TTL: leaseTTL})
		return err
	}, func(racer string, err error) { wantCode(t, racer, err, agents.CodeRunBusy) })
	want := fmt.Sprintf("racer-%d", winner)
	if runs[winner].LeaseOwner != want {
		t.Fatalf("winner's run has LeaseOwner %q, want %q", runs[winner].LeaseOwner, want)
	}
	if got := f.getRun(t, tenant, "run-1").LeaseOwner; got != want {
		t.Fatalf("stored LeaseOwner = %q, want the winner %q", got, want)
	}
}

func testLeaseRace(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "starter")
	must(t, "ReleaseLease", f.Runs.ReleaseLease(f.ctx, a, "run-1", "starter"))
	f.race(t, a)
}

func testLeaseRaceExpired(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "crashed")
	f.Clock.Advance(leaseTTL + time.Second)
	f.race(t, a)
}

func testReleaseNonOwner(t *testing.T, f *fixture) {
	a := f.tenant("a")
	r := f.startRun(t, a, "run-1", "worker-1")
	must(t, "ReleaseLease by worker-2", f.Runs.ReleaseLease(f.ctx, a, "run-1", "worker-2"))
	diff(t, "run after a non-owner release", f.getRun(t, a, "run-1"), r)
	_, err := f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	wantCode(t, "acquire after a non-owner release", err, agents.CodeRunBusy)
}

func testReleaseFrees(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	must(t, "ReleaseLease", f.Runs.ReleaseLease(f.ctx, a, "run-1", "worker-1"))
	if r := f.getRun(t, a, "run-1"); r.LeaseOwner != "" {
		t.Fatalf("LeaseOwner = %q after release, want empty", r.LeaseOwner)
	}
	r, err := f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	must(t, "acquire after release", err)
	if r.LeaseOwner != "worker-2" {
		t.Fatalf("LeaseOwner = %q, want worker-2", r.LeaseOwner)
	}
}

func testRunTenantIsolation(t *testing.T, f *fixture) {
	a, b := f.tenant("a"), f.tenant("b")
	f.startRun(t, a, "run-1", "worker-1")
	f.step(t, a, "run-1", "worker-1", "setup", bindings.StepCompleted)
	f.wantNoRun(t, " as b", b, "run-1", "worker-1")
	// b's run of the same id is its own: not busy, empty journal.
	rb := f.startRun(t, b, "run-1", "worker-b")
	if rb.LeaseOwner != "worker-b" || len(f.journal(t, b, "run-1")) != 0 {
		t.Fatalf("b's run: %+v", rb)
	}
	ra := f.getRun(t, a, "run-1")
	if ra.Status != bindings.RunRunning || ra.LeaseOwner != "worker-1" {
		t.Fatalf("b's calls changed a's run: %+v", ra)
	}
	diff(t, "a's journal", keys(f.journal(t, a, "run-1")), []string{"setup/completed"})
}

func testRunCopies(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	in := bindings.AppendStepInput{TenantID: a, RunID: "run-1", Entry: bindings.JournalEntry{
		Key: "setup", Node: "setup", Status: bindings.StepFailed, Output: json.RawMessage(`{"a":1}`),
		Error: &bindings.StepError{Code: "x", Message: "y"}, At: at(1),
	}}
	e, _, err := f.Runs.AppendStep(f.ctx, in)
	must(t, "AppendStep", err)
	want := []bindings.JournalEntry{{Seq: e.Seq, Key: "setup", Node: "setup", Status: bindings.StepFailed,
		Output: json.RawMessage(`{"a":1}`), Error: &bindings.StepError{Code: "x", Message: "y"}, At: at(1)}}
	in.Entry.Output[1] = 'X'
	in.Entry.Error.Code = "changed"
	e.Output[1] = 'Y'
	e.Error.Message = "changed"
	j := f.journal(t, a, "run-1")
	j[0].Output[1] = 'Z'
	j[0].Error.Code = "changed again"
	diff(t, "journal after mutating returned entries", f.journal(t, a, "run-1"), want)
}

func testRunCancelled(t *testing.T, f *fixture) {
	a := f.tenant("a")
	if _, err := f.Runs.StartRun(canceled(t), bindings.StartRunInput{TenantID: a, RunID: "run-1", Owner: "w", LeaseTTL: leaseTTL}); err == nil {
		t.Fatal("StartRun with a cancelled context succeeded")
	}
}
