package bindingstest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// RunSnapshotTests checks a RunSnapshotBinding: a write reads back
// unchanged, writes are idempotent per (tenant, run id) keeping the first,
// a missing snapshot (or another tenant's) is run-snapshot-missing.
func RunSnapshotTests(t *testing.T, newHarness NewHarness) {
	t.Helper()
	runSuite(t, newHarness, "RunSnapshotBinding", func(h Harness) bool { return h.Snapshots != nil }, snapshotCases)
}

var snapshotCases = []testCase{
	{name: "WriteThenReadRoundTripsEveryField", run: testSnapshotRoundTrip},
	{name: "WriteIsIdempotentPerRunKeepingTheFirst", run: testSnapshotIdempotent},
	{name: "WriteWithZeroCreatedAtUsesNow", clock: true, run: testSnapshotNow},
	{name: "ReadMissingIsSnapshotMissing", run: testSnapshotMissing},
	{name: "WriteRequiresTenantAndRunID", run: testSnapshotValidates},
	{name: "TenantIsolation", run: testSnapshotTenantIsolation},
	{name: "ReturnedValuesAreCopies", run: testSnapshotCopies},
	{name: "CancelledContextFails", run: testSnapshotCancelled},
}

func snapshot(tenant, run string) bindings.RunSnapshotRecord {
	return bindings.RunSnapshotRecord{
		TenantID: tenant, RunID: run, FlowID: "agent.turn", FlowVersion: "1.1.0",
		AgentID: "acme.drafter", AgentVersion: "1.0.0", ConversationID: "conv-1", ProjectID: "proj-1",
		Input:     json.RawMessage(`{"userMessage":"draft an NDA","parameters":{"firmName":"Acme LLP"},"n":[1,2,3]}`),
		CreatedAt: at(3),
	}
}

// writeRead writes in and returns the run's snapshot as read back.
func (f *fixture) writeRead(t *testing.T, what string, in bindings.RunSnapshotRecord) bindings.RunSnapshotRecord {
	t.Helper()
	must(t, what, f.Snapshots.Write(f.ctx, in))
	return mustReturn(f.Snapshots.Read(f.ctx, in.TenantID, in.RunID))(t, "Read")
}

func testSnapshotRoundTrip(t *testing.T, f *fixture) {
	a := f.tenant("a")
	want := snapshot(a, "run-1")
	got := f.writeRead(t, "Write", want)
	diff(t, "snapshot", got, want)
}

func testSnapshotIdempotent(t *testing.T, f *fixture) {
	a := f.tenant("a")
	first := snapshot(a, "run-1")
	must(t, "first Write", f.Snapshots.Write(f.ctx, first))
	second := first
	second.AgentVersion = "2.0.0"
	second.Input = json.RawMessage(`{"userMessage":"something else"}`)
	second.CreatedAt = at(99)
	got := f.writeRead(t, "second Write", second)
	diff(t, "snapshot after a second write", got, first)
}

func testSnapshotNow(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.Clock.Advance(90 * time.Minute)
	in := snapshot(a, "run-1")
	in.CreatedAt = time.Time{}
	got := f.writeRead(t, "Write", in)
	if !got.CreatedAt.Equal(f.Clock.Now()) {
		t.Fatalf("CreatedAt = %v, want the clock's now %v", got.CreatedAt, f.Clock.Now())
	}
}

func testSnapshotMissing(t *testing.T, f *fixture) {
	_, err := f.Snapshots.Read(f.ctx, f.tenant("a"), "missing")
	wantCode(t, "Read", err, agents.CodeRunSnapshotMissing)
	var e *agents.RunSnapshotMissingError
	if !errors.As(err, &e) || e.RunID != "missing" {
		t.Fatalf("error %v: want *agents.RunSnapshotMissingError naming run %q", err, "missing")
	}
}

func testSnapshotValidates(t *testing.T, f *fixture) {
	noTenant := snapshot("", "run-1")
	wantCode(t, "no tenant", f.Snapshots.Write(f.ctx, noTenant), agents.CodeInvalidMessage)
	noRun := snapshot(f.tenant("a"), "")
	wantCode(t, "no run id", f.Snapshots.Write(f.ctx, noRun), agents.CodeInvalidMessage)
}

func testSnapshotTenantIsolation(t *testing.T, f *fixture) {
	a, b := f.tenant("a"), f.tenant("b")
	sa := snapshot(a, "run-1")
	must(t, "Write a", f.Snapshots.Write(f.ctx, sa))
	_, err := f.Snapshots.Read(f.ctx, b, "run-1")
	wantCode(t, "Read as b", err, agents.CodeRunSnapshotMissing)
	sb := snapshot(b, "run-1")
	sb.AgentID = "b.agent"
	must(t, "Write b", f.Snapshots.Write(f.ctx, sb))
	got, err := f.Snapshots.Read(f.ctx, b, "run-1")
	must(t, "Read b", err)
	diff(t, "b's snapshot", got, sb)
	got, err = f.Snapshots.Read(f.ctx, a, "run-1")
	must(t, "Read a", err)
	diff(t, "a's snapshot", got, sa)
}

func testSnapshotCopies(t *testing.T, f *fixture) {
	a := f.tenant("a")
	in := snapshot(a, "run-1")
	must(t, "Write", f.Snapshots.Write(f.ctx, in))
	want := snapshot(a, "run-1")
	in.Input[2] = 'X' // the caller's buffer changes after the write
	got, err := f.Snapshots.Read(f.ctx, a, "run-1")
	must(t, "Read", err)
	got.Input[2] = 'Y'
	got, err = f.Snapshots.Read(f.ctx, a, "run-1")
	must(t, "Read again", err)
	diff(t, "snapshot", got, want)
}

func testSnapshotCancelled(t *testing.T, f *fixture) {
	if err := f.Snapshots.Write(canceled(t), snapshot(f.tenant("a"), "run-1")); err == nil {
		t.Fatal("Write with a cancelled context succeeded")
	}
}
