package bindingstest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// sharedReadCases check bindings.SharedJournalReader on the journal of a
// bindings.TrustedJournal (RunBatchTests runs them when Harness.Runs has
// one).
var sharedReadCases = []testCase{
	{name: "ReadJournalSharedIsReadJournalAppendedToDst", run: testSharedReadIsReadJournal},
	{name: "ReadJournalSharedIsUnchangedByLaterWrites", run: testSharedReadAfterWrites},
	{name: "ReadJournalSharedIsUnchangedByRetention", clock: true, run: testSharedReadAfterPrune},
	{name: "ReadJournalSharedOfUnknownRunIsJournalUnavailable", run: testSharedReadUnknown},
}

// hasSharedRead reports whether h.Runs's trusted journal is a
// bindings.SharedJournalReader.
func hasSharedRead(h Harness) bool {
	tj, ok := h.Runs.(bindings.TrustedJournal)
	if !ok {
		return false
	}
	j, _ := tj.TrustedJournal()
	_, ok = j.(bindings.SharedJournalReader)
	return ok
}

func (f *fixture) sharedRead(t *testing.T, tenant, run string, dst []bindings.JournalEntry) []bindings.JournalEntry {
	t.Helper()
	j, _ := f.Runs.(bindings.TrustedJournal).TrustedJournal()
	es, err := j.(bindings.SharedJournalReader).ReadJournalShared(f.ctx, tenant, run, dst)
	must(t, "ReadJournalShared", err)
	return es
}

// copyEntries copies entries deeply: what a shared read returned, to
// compare with what it returns later.
func copyEntries(es []bindings.JournalEntry) []bindings.JournalEntry {
	out := make([]bindings.JournalEntry, len(es))
	for i, e := range es {
		if e.Output != nil {
			e.Output = append(json.RawMessage(nil), e.Output...)
		}
		if e.Error != nil {
			se := *e.Error
			e.Error = &se
		}
		e.Key, e.Node = strings.Clone(e.Key), strings.Clone(e.Node)
		out[i] = e
	}
	return out
}

// sharedRun is a run of tenant with three entries, its lease held by
// worker-1.
func (f *fixture) sharedRun(t *testing.T, tenant string) {
	t.Helper()
	f.startRun(t, tenant, "run-1", "worker-1")
	for _, k := range []string{"setup", "agent-loop/1/model-call", "persist-final-message"} {
		f.step(t, tenant, "run-1", "worker-1", k, bindings.StepCompleted)
	}
}

func testSharedReadIsReadJournal(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.sharedRun(t, a)
	dst := make([]bindings.JournalEntry, 1, 8)
	dst[0].Key = "mine"
	got := f.sharedRead(t, a, "run-1", dst)
	if len(got) != 4 || got[0].Key != "mine" {
		t.Fatalf("ReadJournalShared gave %d entries, first %q: want dst's one and the run's three", len(got), got[0].Key)
	}
	diff(t, "shared journal", got[1:], f.journal(t, a, "run-1"))
	for _, e := range got[1:] {
		if cap(e.Output) != len(e.Output) {
			t.Errorf("entry %s: output capacity %d, length %d (want it capped)", e.Key, cap(e.Output), len(e.Output))
		}
	}
}

func testSharedReadAfterWrites(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.sharedRun(t, a)
	read := f.sharedRead(t, a, "run-1", nil)
	was := copyEntries(read)
	grown := append(read[0].Output, `xxxxxxxx`...)
	f.step(t, a, "run-1", "worker-1", "agent-loop/2/model-call", bindings.StepStarted)
	big := json.RawMessage(`"` + strings.Repeat("b", 70000) + `"`)
	if sb, ok := f.Runs.(bindings.StepBatcher); ok {
		_, _, err := sb.AppendSteps(f.ctx, bindings.AppendStepsInput{TenantID: a, RunID: "run-1", Owner: "worker-1", Entries: []bindings.JournalEntry{
			{Key: "agent-loop/2/model-call", Node: "model-call", Status: bindings.StepCompleted, Output: big, At: at(2)},
		}})
		must(t, "AppendSteps", err)
	}
	_, err := f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "run-1", Owner: "worker-1", TTL: time.Hour})
	must(t, "AcquireLease", err)
	must(t, "SetRunStatus", f.Runs.SetRunStatus(f.ctx, a, "run-1", bindings.RunCompleted))
	diff(t, "shared read after later writes", read, was)
	if string(grown[len(grown)-8:]) != "xxxxxxxx" {
		t.Fatalf("appending to a read output gave %q", grown)
	}
	now := f.journal(t, a, "run-1")
	if len(now) < len(was) {
		t.Fatalf("journal has %d entries after the writes, want at least %d", len(now), len(was))
	}
	diff(t, "stored entries after appending to a read output", now[:len(was)], was)
}

func testSharedReadAfterPrune(t *testing.T, f *fixture) {
	pr, ok := f.Runs.(bindings.Pruner)
	if !ok {
		t.Skip("Harness.Runs is not a bindings.Pruner")
	}
	a := f.tenant("a")
	f.sharedRun(t, a)
	must(t, "SetRunStatus", f.Runs.SetRunStatus(f.ctx, a, "run-1", bindings.RunCompleted))
	must(t, "ReleaseLease", f.Runs.ReleaseLease(f.ctx, a, "run-1", "worker-1"))
	read := f.sharedRead(t, a, "run-1", nil)
	was := copyEntries(read)
	f.Clock.Advance(time.Hour)
	st, err := pr.Prune(f.ctx, a, f.Clock.Now())
	must(t, "Prune", err)
	if st.Runs != 1 {
		t.Fatalf("Prune deleted %d runs, want the finished one", st.Runs)
	}
	f.sharedRun(t, a) // a run of the same id, journaled anew
	diff(t, "shared read after retention", read, was)
}

func testSharedReadUnknown(t *testing.T, f *fixture) {
	j, _ := f.Runs.(bindings.TrustedJournal).TrustedJournal()
	_, err := j.(bindings.SharedJournalReader).ReadJournalShared(f.ctx, f.tenant("a"), "no-such-run", nil)
	wantCode(t, "ReadJournalShared of an unknown run", err, agents.CodeRunJournalUnavailable)
}
