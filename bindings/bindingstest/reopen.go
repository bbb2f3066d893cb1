package bindingstest

import (
	"encoding/json"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// reopenCases check bindings.RunReopener (RunBatchTests runs them when the
// binding has it and Harness.Snapshots is the same store).
var reopenCases = []testCase{
	{name: "ReopenRunLeasesAndReadsSnapshotAndJournal", run: testReopenRun},
	{name: "ReopenRunOfALeaseHeldByAnotherIsBusy", run: testReopenRunBusy},
	{name: "ReopenRunWithoutASnapshotLeasesNothing", run: testReopenRunNoSnapshot},
	{name: "ReopenRunOfAnUnknownRunIsSnapshotMissing", run: testReopenRunUnknown},
	{name: "ReopenRunHeldReadsWithoutLeasing", run: testReopenRunHeld},
}

func (f *fixture) reopenRun(in bindings.ReopenRunInput) (bindings.ReopenRunResult, error) {
	return f.Runs.(bindings.RunReopener).ReopenRun(f.ctx, in)
}

// parkedRun is a run with a snapshot and one journal entry whose lease
// owner gave it up.
func (f *fixture) parkedRun(t *testing.T, tenant string) {
	t.Helper()
	in := openInput(tenant, "run-1", "worker-1", `{"userMessage":"first"}`)
	must(t, "snapshot Write", f.Snapshots.Write(f.ctx, in.Snapshot))
	f.startRun(t, tenant, "run-1", "worker-1")
	f.step(t, tenant, "run-1", "worker-1", "setup", bindings.StepCompleted)
	must(t, "ReleaseLease", f.Runs.ReleaseLease(f.ctx, tenant, "run-1", "worker-1"))
}

func testReopenRun(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.parkedRun(t, a)
	res, err := f.reopenRun(bindings.ReopenRunInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	must(t, "ReopenRun", err)
	if res.Run.LeaseOwner != "worker-2" || res.Run.ID != "run-1" {
		t.Fatalf("run = %+v, want leased to worker-2", res.Run)
	}
	diff(t, "run", f.getRun(t, a, "run-1"), res.Run)
	stored, err := f.Snapshots.Read(f.ctx, a, "run-1")
	must(t, "Read snapshot", err)
	if !jsonEqual(res.Snapshot.Input, json.RawMessage(`{"userMessage":"first"}`)) || res.Snapshot.AgentID != stored.AgentID ||
		!res.Snapshot.CreatedAt.Equal(stored.CreatedAt) || res.Snapshot.ConversationID != "conv-1" {
		t.Fatalf("snapshot = %+v, want the stored %+v", res.Snapshot, stored)
	}
	diff(t, "journal", res.Journal, f.journal(t, a, "run-1"))
	if len(res.Journal) != 1 || res.Journal[0].Key != "setup" {
		t.Fatalf("journal = %+v, want the setup entry", res.Journal)
	}
}

func testReopenRunBusy(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.parkedRun(t, a)
	if _, err := f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "run-1", Owner: "worker-1", TTL: leaseTTL}); err != nil {
		t.Fatal(err)
	}
	_, err := f.reopenRun(bindings.ReopenRunInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	wantCode(t, "ReopenRun of a held lease", err, agents.CodeRunBusy)
	if got := f.getRun(t, a, "run-1").LeaseOwner; got != "worker-1" {
		t.Fatalf("lease owner after a busy ReopenRun = %q, want worker-1", got)
	}
}

func testReopenRunNoSnapshot(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	must(t, "ReleaseLease", f.Runs.ReleaseLease(f.ctx, a, "run-1", "worker-1"))
	_, err := f.reopenRun(bindings.ReopenRunInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	wantCode(t, "ReopenRun without a snapshot", err, agents.CodeRunSnapshotMissing)
	if got := f.getRun(t, a, "run-1").LeaseOwner; got != "" {
		t.Fatalf("lease owner after ReopenRun without a snapshot = %q, want none", got)
	}
}

func testReopenRunUnknown(t *testing.T, f *fixture) {
	_, err := f.reopenRun(bindings.ReopenRunInput{TenantID: f.tenant("a"), RunID: "no-such-run", Owner: "worker-1", TTL: leaseTTL})
	wantCode(t, "ReopenRun of an unknown run", err, agents.CodeRunSnapshotMissing)
}

func testReopenRunHeld(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.parkedRun(t, a)
	before, err := f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "run-1", Owner: "worker-1", TTL: leaseTTL})
	must(t, "AcquireLease", err)
	res, err := f.reopenRun(bindings.ReopenRunInput{TenantID: a, RunID: "run-1", Owner: "worker-1", Held: true})
	must(t, "ReopenRun held", err)
	if res.Run != (bindings.Run{}) || len(res.Journal) != 1 || res.Snapshot.RunID != "run-1" {
		t.Fatalf("ReopenRun held = %+v, want no run and the snapshot and journal read", res)
	}
	diff(t, "run after a held ReopenRun", f.getRun(t, a, "run-1"), before)
}
