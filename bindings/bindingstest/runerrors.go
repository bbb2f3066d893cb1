package bindingstest

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// runErrorCases check bindings.RunErrorRecorder: a run's failed drives are
// counted by the store, their last code, message and time read back
// through GetRun and ListRuns while the run has not ended, and nothing
// once it ended.
var runErrorCases = []testCase{
	{name: "RecordRunErrorCountsAndReadsBackThroughGetAndList", clock: true, run: testRunErrorReadBack},
	{name: "RecordRunErrorHoldsAnyText", run: testRunErrorAnyText},
	{name: "AnEndedRunHasNoLastErrorAndRecordsNone", run: testRunErrorEnded},
	{name: "ConcurrentRecordsAreEachCounted", run: testRunErrorConcurrent},
	{name: "RecordRunErrorValidatesAndIsTenantScoped", run: testRunErrorValidates},
	{name: "ARunsLastErrorIsACopy", run: testRunErrorCopy},
}

func (f *fixture) recordRunError(t *testing.T, tenant, run, code, msg string) bindings.RunError {
	t.Helper()
	return mustReturn(f.Runs.(bindings.RunErrorRecorder).RecordRunError(f.ctx, bindings.RecordRunErrorInput{TenantID: tenant, RunID: run, Code: code, Message: msg}))(t, "RecordRunError")
}

// listedRun is run as the tenant's first ListRuns page shows it.
func (f *fixture) listedRun(t *testing.T, tenant, run string) bindings.Run {
	t.Helper()
	lister, ok := f.Runs.(bindings.RunLister)
	if !ok {
		return f.getRun(t, tenant, run)
	}
	page, err := lister.ListRuns(f.ctx, bindings.ListRunsInput{TenantID: tenant, Limit: bindings.MaxRunPageLimit})
	must(t, "ListRuns", err)
	for _, r := range page.Runs {
		if r.ID == run {
			return r
		}
	}
	t.Fatalf("ListRuns does not list run %s", run)
	return bindings.Run{}
}

func wantRunError(t *testing.T, what string, got *bindings.RunError, want bindings.RunError) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: LastError nil, want %+v", what, want)
	}
	if got.Code != want.Code || got.Message != want.Message || got.Attempts != want.Attempts || !got.At.Equal(want.At) {
		t.Fatalf("%s: LastError %+v, want %+v", what, *got, want)
	}
}

func testRunErrorReadBack(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "r1", "w1")
	if r := f.getRun(t, a, "r1"); r.LastError != nil {
		t.Fatalf("a new run has LastError %+v", *r.LastError)
	}
	first := f.Clock.Now()
	e := f.recordRunError(t, a, "r1", agents.CodePersistence, "connection reset")
	want := bindings.RunError{Code: agents.CodePersistence, Message: "connection reset", At: first, Attempts: 1}
	wantRunError(t, "RecordRunError", &e, want)
	f.Clock.Advance(time.Minute)
	e = f.recordRunError(t, a, "r1", agents.CodeCapabilityRoutingFailed, "no provider serves scripted/model")
	want = bindings.RunError{Code: agents.CodeCapabilityRoutingFailed, Message: "no provider serves scripted/model", At: first.Add(time.Minute), Attempts: 2}
	wantRunError(t, "second RecordRunError", &e, want)
	wantRunError(t, "GetRun", f.getRun(t, a, "r1").LastError, want)
	wantRunError(t, "ListRuns", f.listedRun(t, a, "r1").LastError, want)
	if r := f.getRun(t, a, "r1"); r.Status != bindings.RunRunning || r.LeaseOwner != "w1" {
		t.Fatalf("recording an error changed the run: %+v", r)
	}
}

func testRunErrorAnyText(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "r1", "w1")
	for _, msg := range oddTexts[:len(oddTexts)-1] {
		f.recordRunError(t, a, "r1", agents.CodeInvalidMessage, msg)
		if got := f.getRun(t, a, "r1").LastError; got == nil || got.Message != msg {
			t.Fatalf("message %q read back as %+v", msg, got)
		}
	}
	long := "x" + strings.Repeat("é", bindings.MaxRunErrorMessage) // the cut falls inside an é
	e := f.recordRunError(t, a, "r1", agents.CodeInvalidMessage, long)
	got := f.getRun(t, a, "r1").LastError
	if len(e.Message) > bindings.MaxRunErrorMessage || got == nil || got.Message != e.Message || !strings.HasPrefix(long, got.Message) ||
		len(got.Message) < bindings.MaxRunErrorMessage-4 || !utf8.ValidString(got.Message) {
		t.Fatalf("a long message is kept as %d bytes (returned %d), want its first %d at most", len(got.Message), len(e.Message), bindings.MaxRunErrorMessage)
	}
}

func testRunErrorEnded(t *testing.T, f *fixture) {
	a := f.tenant("a")
	for _, end := range []bindings.RunStatus{bindings.RunCompleted, bindings.RunFailed} {
		run := "r-" + string(end)
		f.startRun(t, a, run, "w1")
		f.recordRunError(t, a, run, agents.CodeRunBusy, "held")
		must(t, "SetRunStatus", f.Runs.SetRunStatus(f.ctx, a, run, end))
		if r := f.getRun(t, a, run); r.LastError != nil {
			t.Fatalf("GetRun of a %s run: LastError %+v, want nil (the end clears it)", end, *r.LastError)
		}
		if r := f.listedRun(t, a, run); r.LastError != nil {
			t.Fatalf("ListRuns of a %s run: LastError %+v, want nil", end, *r.LastError)
		}
		if e := f.recordRunError(t, a, run, agents.CodeRunBusy, "late"); e != (bindings.RunError{}) {
			t.Fatalf("RecordRunError on a %s run = %+v, want nothing recorded", end, e)
		}
		if r := f.getRun(t, a, run); r.LastError != nil {
			t.Fatalf("a %s run got LastError %+v", end, *r.LastError)
		}
	}
	// Parked (suspended) is not an end: the record stays.
	f.startRun(t, a, "parked", "w1")
	f.recordRunError(t, a, "parked", agents.CodePersistence, "x")
	must(t, "SetRunStatus", f.Runs.SetRunStatus(f.ctx, a, "parked", bindings.RunSuspended))
	if r := f.getRun(t, a, "parked"); r.LastError == nil || r.LastError.Attempts != 1 {
		t.Fatalf("a suspended run lost its LastError: %+v", r.LastError)
	}
}

func testRunErrorConcurrent(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "r1", "")
	const n = 16
	seen := make([]int, n)
	concurrently(n, func(i int) {
		e, err := f.Runs.(bindings.RunErrorRecorder).RecordRunError(f.ctx, bindings.RecordRunErrorInput{TenantID: a, RunID: "r1", Code: agents.CodePersistence, Message: "m"})
		if err != nil {
			t.Errorf("RecordRunError: %v", err)
		}
		seen[i] = e.Attempts
	})
	if got := f.getRun(t, a, "r1").LastError; got == nil || got.Attempts != n {
		t.Fatalf("after %d concurrent records: %+v, want Attempts %d", n, got, n)
	}
	counted := map[int]bool{}
	for _, c := range seen {
		counted[c] = true
	}
	if len(counted) != n {
		t.Fatalf("concurrent records returned counts %v, want each of 1..%d once", seen, n)
	}
}

func testRunErrorValidates(t *testing.T, f *fixture) {
	a, b := f.tenant("a"), f.tenant("b")
	f.startRun(t, a, "r1", "w1")
	rec := f.Runs.(bindings.RunErrorRecorder)
	_, err := rec.RecordRunError(f.ctx, bindings.RecordRunErrorInput{TenantID: a, RunID: "r1", Message: "no code"})
	wantCode(t, "RecordRunError without a code", err, agents.CodeInvalidMessage)
	_, err = rec.RecordRunError(f.ctx, bindings.RecordRunErrorInput{TenantID: a, RunID: "bad\x00id", Code: "x"})
	wantCode(t, "RecordRunError of a bad run id", err, agents.CodeInvalidMessage)
	_, err = rec.RecordRunError(f.ctx, bindings.RecordRunErrorInput{TenantID: a, RunID: "missing", Code: "x"})
	wantCode(t, "RecordRunError of a missing run", err, agents.CodeRunJournalUnavailable)
	_, err = rec.RecordRunError(f.ctx, bindings.RecordRunErrorInput{TenantID: b, RunID: "r1", Code: "x"})
	wantCode(t, "RecordRunError of another tenant's run", err, agents.CodeRunJournalUnavailable)
	if r := f.getRun(t, a, "r1"); r.LastError != nil {
		t.Fatalf("refused records stored %+v", *r.LastError)
	}
}

func testRunErrorCopy(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "r1", "w1")
	f.recordRunError(t, a, "r1", agents.CodePersistence, "kept")
	r := f.getRun(t, a, "r1")
	r.LastError.Message, r.LastError.Attempts = "changed", 99
	l := f.listedRun(t, a, "r1")
	l.LastError.Code = "changed"
	if got := f.getRun(t, a, "r1").LastError; got.Message != "kept" || got.Attempts != 1 || got.Code != agents.CodePersistence {
		t.Fatalf("changing a returned LastError changed the store's: %+v", *got)
	}
}
