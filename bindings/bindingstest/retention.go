package bindingstest

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// RunRetentionTests checks the optional retention capabilities of a store:
// bindings.Pruner on Harness.Runs (which finished and parked runs Prune
// deletes, with their journals, snapshots and approvals, and which it must
// keep) and bindings.ApprovalSweeper on Harness.Hitl (which approvals
// ExpiredApprovals lists, in which order, and MarkApprovalExpired). The
// store must hold the runs, snapshots and approvals together. A harness
// whose bindings lack a capability skips its cases.
func RunRetentionTests(t *testing.T, newHarness NewHarness) {
	t.Helper()
	t.Run("Prune", func(t *testing.T) {
		runSuite(t, newHarness, "bindings.Pruner (with Snapshots and Hitl)", func(h Harness) bool {
			return implements[bindings.Pruner](h.Runs) && h.Snapshots != nil && h.Hitl != nil
		}, pruneCases)
	})
	t.Run("Sweep", func(t *testing.T) {
		runSuite(t, newHarness, "bindings.ApprovalSweeper (with Runs)", func(h Harness) bool {
			return implements[bindings.ApprovalSweeper](h.Hitl) && h.Runs != nil
		}, sweepCases)
	})
}

var pruneCases = []testCase{
	{name: "PruneDeletesFinishedRunsWithJournalSnapshotAndApprovals", clock: true, run: testPruneFinished},
	{name: "PruneKeepsRunsUpdatedAtOrAfterTheCutoff", clock: true, run: testPruneKeepsRecent},
	{name: "PruneNeverDeletesRunningRuns", clock: true, run: testPruneKeepsRunning},
	{name: "PruneKeepsAFinishedRunWithALiveLease", clock: true, run: testPruneKeepsLeased},
	{name: "PruneKeepsSuspendedRunsUntilEveryApprovalIsMarkedExpired", clock: true, run: testPruneSuspended},
	{name: "PruneIsTenantScoped", clock: true, run: testPruneTenant},
	{name: "ConcurrentPrunesDeleteEachRunOnce", clock: true, run: testPruneConcurrent},
	{name: "PruneRequiresTenant", run: testPruneValidates},
	{name: "PruneWithCancelledContextFails", run: testPruneCancelled},
}

var sweepCases = []testCase{
	{name: "ExpiredApprovalsListsPendingExpiredApprovalsOfSuspendedRuns", clock: true, run: testSweepLists},
	{name: "ExpiredApprovalsPagesInOrderAcrossTenants", clock: true, run: testSweepPages},
	{name: "MarkApprovalExpiredRecordsTheExpiryOnce", clock: true, run: testSweepMark},
	{name: "MarkApprovalExpiredLeavesOthersUnchanged", clock: true, run: testSweepMarkOthers},
	{name: "ExpiredApprovalsRequiresALimit", run: testSweepValidates},
	{name: "SweepWithCancelledContextFails", run: testSweepCancelled},
}

// pruner and sweeper return the capabilities under test.
func (f *fixture) pruner() bindings.Pruner           { return f.Runs.(bindings.Pruner) }
func (f *fixture) sweeper() bindings.ApprovalSweeper { return f.Hitl.(bindings.ApprovalSweeper) }

// runSpec describes a run a retention case stores.
type runSpec struct {
	status   bindings.RunStatus
	entries  int
	snapshot bool
	// approvals are asked for by the run, each expiring after its ttl.
	approvals []time.Duration
	// keepLease leaves the lease held (for leaseTTL) instead of releasing it.
	keepLease bool
}

// storeRun stores a run as of the harness clock: snapshot, run, journal
// entries, approvals (ids run+"/a<i>"), status, and releases its lease.
func (f *fixture) storeRun(t *testing.T, tenant, run string, spec runSpec) {
	t.Helper()
	if spec.snapshot {
		must(t, "snapshot Write", f.Snapshots.Write(f.ctx, bindings.RunSnapshotWriteInput{
			TenantID: tenant, RunID: run, FlowID: "agent.turn", FlowVersion: "1.1.0", AgentID: "acme.agent", AgentVersion: "1.0.0",
			Input: json.RawMessage(`{"userMessage":"hi"}`),
		}))
	}
	f.startRun(t, tenant, run, "owner-"+run)
	for i := range spec.entries {
		_, _, err := f.Runs.AppendStep(f.ctx, bindings.AppendStepInput{TenantID: tenant, RunID: run, Owner: "owner-" + run, Entry: bindings.JournalEntry{
			Key: fmt.Sprintf("step-%d", i), Node: "setup", Status: bindings.StepCompleted, Output: json.RawMessage(`{"ok":true}`),
		}})
		must(t, "AppendStep", err)
	}
	for i, ttl := range spec.approvals {
		r := f.clockRequest(tenant, fmt.Sprintf("%s/a%d", run, i), ttl)
		r.RunID = run
		f.request(t, r)
	}
	if spec.status != bindings.RunRunning {
		must(t, "SetRunStatus", f.Runs.SetRunStatus(f.ctx, tenant, run, spec.status))
	}
	if !spec.keepLease {
		must(t, "ReleaseLease", f.Runs.ReleaseLease(f.ctx, tenant, run, "owner-"+run))
	}
}

// gone checks that a run and everything Prune deletes with it are gone.
func (f *fixture) gone(t *testing.T, tenant, run string, approvals int) {
	t.Helper()
	_, err := f.Runs.GetRun(f.ctx, tenant, run)
	wantCode(t, "GetRun of a pruned run", err, agents.CodeRunJournalUnavailable)
	_, err = f.Runs.ReadJournal(f.ctx, tenant, run)
	wantCode(t, "ReadJournal of a pruned run", err, agents.CodeRunJournalUnavailable)
	_, err = f.Snapshots.Read(f.ctx, tenant, run)
	wantCode(t, "snapshot Read of a pruned run", err, agents.CodeRunSnapshotMissing)
	for i := range approvals {
		_, err = f.Hitl.GetApproval(f.ctx, tenant, fmt.Sprintf("%s/a%d", run, i))
		wantCode(t, "GetApproval of a pruned run's approval", err, agents.CodeApprovalNotFound)
	}
}

// kept checks that a run and its journal are still there.
func (f *fixture) kept(t *testing.T, tenant, run string, entries int) {
	t.Helper()
	_, err := f.Runs.GetRun(f.ctx, tenant, run)
	must(t, "GetRun of a kept run "+run, err)
	j, err := f.Runs.ReadJournal(f.ctx, tenant, run)
	must(t, "ReadJournal of a kept run "+run, err)
	if len(j) != entries {
		t.Fatalf("kept run %s has %d journal entries, want %d", run, len(j), entries)
	}
}

func (f *fixture) prune(t *testing.T, tenant string, olderThan time.Time) bindings.PruneStats {
	t.Helper()
	return mustReturn(f.pruner().Prune(f.ctx, tenant, olderThan))(t, "Prune")
}

func testPruneFinished(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.storeRun(t, a, "done", runSpec{status: bindings.RunCompleted, entries: 3, snapshot: true, approvals: []time.Duration{time.Hour}})
	f.storeRun(t, a, "failed", runSpec{status: bindings.RunFailed, entries: 2, snapshot: true})
	f.storeRun(t, a, "no-snapshot", runSpec{status: bindings.RunCompleted, entries: 1})
	f.Clock.Advance(time.Hour)
	st := f.prune(t, a, f.Clock.Now())
	diff(t, "PruneStats", st, bindings.PruneStats{Runs: 3, JournalEntries: 6, Snapshots: 2, Approvals: 1})
	f.gone(t, a, "done", 1)
	f.gone(t, a, "failed", 0)
	f.gone(t, a, "no-snapshot", 0)
	diff(t, "second Prune", f.prune(t, a, f.Clock.Now()), bindings.PruneStats{})
}

func testPruneKeepsRecent(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.storeRun(t, a, "old", runSpec{status: bindings.RunCompleted, entries: 1, snapshot: true})
	f.Clock.Advance(time.Minute)
	cutoff := f.Clock.Now()
	f.storeRun(t, a, "at-cutoff", runSpec{status: bindings.RunCompleted, entries: 2, snapshot: true})
	f.Clock.Advance(time.Minute)
	f.storeRun(t, a, "new", runSpec{status: bindings.RunFailed, entries: 1, snapshot: true})
	st := f.prune(t, a, cutoff)
	diff(t, "PruneStats", st, bindings.PruneStats{Runs: 1, JournalEntries: 1, Snapshots: 1})
	f.gone(t, a, "old", 0)
	f.kept(t, a, "at-cutoff", 2)
	f.kept(t, a, "new", 1)
}

func testPruneKeepsRunning(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.storeRun(t, a, "crashed", runSpec{status: bindings.RunRunning, entries: 2, snapshot: true})
	f.storeRun(t, a, "leased", runSpec{status: bindings.RunRunning, entries: 1, keepLease: true})
	f.Clock.Advance(24 * time.Hour) // every lease has expired
	diff(t, "PruneStats", f.prune(t, a, f.Clock.Now()), bindings.PruneStats{})
	f.kept(t, a, "crashed", 2)
	f.kept(t, a, "leased", 1)
}

func testPruneKeepsLeased(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.storeRun(t, a, "replaying", runSpec{status: bindings.RunCompleted, entries: 1, keepLease: true})
	f.Clock.Advance(leaseTTL / 2)
	diff(t, "Prune while the lease is live", f.prune(t, a, f.Clock.Now()), bindings.PruneStats{})
	f.kept(t, a, "replaying", 1)
	// The lease was taken at the run's last update: after it expires the
	// run goes.
	f.Clock.Advance(leaseTTL)
	diff(t, "Prune after the lease expired", f.prune(t, a, f.Clock.Now()), bindings.PruneStats{Runs: 1, JournalEntries: 1})
}

func testPruneSuspended(t *testing.T, f *fixture) {
	a := f.tenant("a")
	hour := time.Hour
	f.storeRun(t, a, "waiting", runSpec{status: bindings.RunSuspended, entries: 2, snapshot: true, approvals: []time.Duration{48 * hour}})
	f.storeRun(t, a, "expired-unswept", runSpec{status: bindings.RunSuspended, entries: 2, snapshot: true, approvals: []time.Duration{hour}})
	f.storeRun(t, a, "expired-swept", runSpec{status: bindings.RunSuspended, entries: 3, snapshot: true, approvals: []time.Duration{hour, hour}})
	f.storeRun(t, a, "half-swept", runSpec{status: bindings.RunSuspended, entries: 1, snapshot: true, approvals: []time.Duration{hour, hour}})
	f.storeRun(t, a, "approved", runSpec{status: bindings.RunSuspended, entries: 1, snapshot: true, approvals: []time.Duration{hour}})
	f.storeRun(t, a, "no-approvals", runSpec{status: bindings.RunSuspended, entries: 1, snapshot: true})
	_, err := f.Hitl.ResolveApproval(f.ctx, a, "approved/a0", approve("rita"))
	must(t, "ResolveApproval", err)
	f.Clock.Advance(2 * hour)
	// Reading an expired approval is not marking it.
	if ap := f.approval(t, a, "expired-unswept/a0"); ap.Status != bindings.ApprovalExpired {
		t.Fatalf("approval past expiry reads %s", ap.Status)
	}
	for _, id := range []string{"expired-swept/a0", "expired-swept/a1", "half-swept/a0"} {
		_, err := f.sweeper().MarkApprovalExpired(f.ctx, a, id)
		must(t, "MarkApprovalExpired "+id, err)
	}
	// The marks happened after the cutoff below: the runs were last
	// updated before it, and that is what counts.
	st := f.prune(t, a, f.Clock.Now().Add(-time.Minute))
	diff(t, "PruneStats", st, bindings.PruneStats{Runs: 1, JournalEntries: 3, Snapshots: 1, Approvals: 2})
	f.gone(t, a, "expired-swept", 2)
	for run, n := range map[string]int{"waiting": 2, "expired-unswept": 2, "half-swept": 1, "approved": 1, "no-approvals": 1} {
		f.kept(t, a, run, n)
	}
	// An approval that expired after the cutoff keeps its run.
	f.storeRun(t, a, "late", runSpec{status: bindings.RunSuspended, entries: 1, approvals: []time.Duration{hour}})
	cutoff := f.Clock.Now().Add(time.Minute)
	f.Clock.Advance(2 * hour)
	_, err = f.sweeper().MarkApprovalExpired(f.ctx, a, "late/a0")
	must(t, "MarkApprovalExpired", err)
	diff(t, "Prune before the approval expired", f.prune(t, a, cutoff), bindings.PruneStats{})
	f.kept(t, a, "late", 1)
}

func testPruneTenant(t *testing.T, f *fixture) {
	a, b := f.tenant("a"), f.tenant("b")
	f.storeRun(t, a, "run-1", runSpec{status: bindings.RunCompleted, entries: 1, snapshot: true, approvals: []time.Duration{time.Minute}})
	f.storeRun(t, b, "run-1", runSpec{status: bindings.RunCompleted, entries: 2, snapshot: true, approvals: []time.Duration{time.Minute}})
	f.Clock.Advance(time.Hour)
	diff(t, "PruneStats of a", f.prune(t, a, f.Clock.Now()), bindings.PruneStats{Runs: 1, JournalEntries: 1, Snapshots: 1, Approvals: 1})
	f.gone(t, a, "run-1", 1)
	f.kept(t, b, "run-1", 2)
	if _, err := f.Snapshots.Read(f.ctx, b, "run-1"); err != nil {
		t.Fatalf("other tenant's snapshot: %v", err)
	}
	f.approval(t, b, "run-1/a0")
}

func testPruneConcurrent(t *testing.T, f *fixture) {
	a := f.tenant("a")
	const runs = 24
	for i := range runs {
		f.storeRun(t, a, fmt.Sprintf("run-%02d", i), runSpec{status: bindings.RunCompleted, entries: 1 + i%3, snapshot: true, approvals: []time.Duration{time.Minute}})
	}
	wantEntries := 0
	for i := range runs {
		wantEntries += 1 + i%3
	}
	f.Clock.Advance(time.Hour)
	const pruners = 4
	stats := make([]bindings.PruneStats, pruners)
	errs := make([]error, pruners)
	concurrently(pruners, func(i int) { stats[i], errs[i] = f.pruner().Prune(f.ctx, a, f.Clock.Now()) })
	var sum bindings.PruneStats
	for i := range pruners {
		must(t, fmt.Sprintf("Prune %d", i), errs[i])
		sum = sum.Add(stats[i])
	}
	diff(t, "summed PruneStats", sum, bindings.PruneStats{Runs: runs, JournalEntries: wantEntries, Snapshots: runs, Approvals: runs})
	for i := range runs {
		f.gone(t, a, fmt.Sprintf("run-%02d", i), 1)
	}
}

func testPruneValidates(t *testing.T, f *fixture) {
	_, err := f.pruner().Prune(f.ctx, "", time.Now())
	wantCode(t, "Prune without a tenant", err, agents.CodeInvalidMessage)
}

func testPruneCancelled(t *testing.T, f *fixture) {
	_, err := f.pruner().Prune(canceled(t), f.tenant("a"), time.Now())
	if err == nil {
		t.Fatal("Prune with a cancelled context succeeded")
	}
}

// sweep lists every expired approval at now, page by page, keeping only
// the tenants given (other cases may share the store), and checks that
// each page respects its limit and the listing order.
func (f *fixture) sweep(t *testing.T, now time.Time, limit int, tenants ...string) []bindings.ApprovalRef {
	t.Helper()
	all := listAll(t, "ExpiredApprovals", limit, func(after bindings.ApprovalRef) ([]bindings.ApprovalRef, error) {
		return f.sweeper().ExpiredApprovals(f.ctx, bindings.ExpiredApprovalsInput{Now: now, Limit: limit, After: after})
	}, bindings.ApprovalRefLess)
	var mine []bindings.ApprovalRef
	for _, r := range all {
		if slices.Contains(tenants, r.TenantID) {
			mine = append(mine, r)
		}
	}
	return mine
}

func refIDs(refs []bindings.ApprovalRef) []string {
	return project(refs, func(r bindings.ApprovalRef) string { return r.TenantID + ":" + r.ApprovalID })
}

func testSweepLists(t *testing.T, f *fixture) {
	a := f.tenant("a")
	hour := time.Hour
	f.storeRun(t, a, "parked", runSpec{status: bindings.RunSuspended, approvals: []time.Duration{hour, 3 * hour}})
	f.storeRun(t, a, "decided", runSpec{status: bindings.RunSuspended, approvals: []time.Duration{hour, hour}})
	f.storeRun(t, a, "running", runSpec{status: bindings.RunRunning, approvals: []time.Duration{hour}})
	f.storeRun(t, a, "done", runSpec{status: bindings.RunCompleted, approvals: []time.Duration{hour}})
	f.storeRun(t, a, "marked", runSpec{status: bindings.RunSuspended, approvals: []time.Duration{hour}})
	// An approval whose run is not stored is not listed either.
	orphan := f.clockRequest(a, "orphan/a0", hour)
	orphan.RunID = "orphan"
	f.request(t, orphan)
	// One that never expires.
	never := f.clockRequest(a, "parked/never", hour)
	never.RunID, never.ExpiresAt = "parked", time.Time{}
	f.request(t, never)
	_, err := f.Hitl.ResolveApproval(f.ctx, a, "decided/a0", approve("rita"))
	must(t, "ResolveApproval", err)
	_, err = f.Hitl.ResolveApproval(f.ctx, a, "decided/a1", bindings.ApprovalDecision{Reviewer: "rita", ReviewerRoles: []string{"standard"}})
	must(t, "ResolveApproval", err)
	created := f.Clock.Now()

	if got := f.sweep(t, created.Add(hour-time.Second), 100, a); len(got) != 0 {
		t.Fatalf("before any expiry: %v", refIDs(got))
	}
	f.Clock.Advance(2 * hour)
	_, err = f.sweeper().MarkApprovalExpired(f.ctx, a, "marked/a0")
	must(t, "MarkApprovalExpired", err)
	got := f.sweep(t, f.Clock.Now(), 100, a)
	want := []bindings.ApprovalRef{{TenantID: a, ApprovalID: "parked/a0", RunID: "parked", ExpiresAt: created.Add(hour)}}
	diff(t, "expired approvals", got, want)
	// A GetApproval past the expiry does not hide the approval from the
	// sweep.
	f.approval(t, a, "parked/a0")
	diff(t, "expired approvals after a read", f.sweep(t, f.Clock.Now(), 100, a), want)
	// The second approval joins once it expires too.
	got = f.sweep(t, created.Add(4*hour), 100, a)
	if ids := refIDs(got); !slices.Equal(ids, []string{a + ":parked/a0", a + ":parked/a1"}) {
		t.Fatalf("expired approvals at +4h: %v", ids)
	}
}

func testSweepPages(t *testing.T, f *fixture) {
	a, b := f.tenant("a"), f.tenant("b")
	// Five approvals in each tenant, expiring at the same two instants, so
	// the order falls back on tenant and id.
	for _, tenant := range []string{b, a} {
		f.storeRun(t, tenant, "r1", runSpec{status: bindings.RunSuspended, approvals: []time.Duration{time.Minute, time.Minute, time.Minute}})
		f.storeRun(t, tenant, "r2", runSpec{status: bindings.RunSuspended, approvals: []time.Duration{time.Second, time.Second}})
	}
	f.Clock.Advance(time.Hour)
	want := []string{a + ":r2/a0", a + ":r2/a1", b + ":r2/a0", b + ":r2/a1", a + ":r1/a0", a + ":r1/a1", a + ":r1/a2", b + ":r1/a0", b + ":r1/a1", b + ":r1/a2"}
	for _, limit := range []int{1, 2, 3, 1000} {
		got := refIDs(f.sweep(t, f.Clock.Now(), limit, a, b))
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: listed %v, want %v", limit, got, want)
		}
	}
}

func testSweepMark(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.storeRun(t, a, "parked", runSpec{status: bindings.RunSuspended, approvals: []time.Duration{time.Minute}})
	f.Clock.Advance(time.Hour)
	markedAt := f.Clock.Now()
	ap, err := f.sweeper().MarkApprovalExpired(f.ctx, a, "parked/a0")
	must(t, "MarkApprovalExpired", err)
	if ap.Status != bindings.ApprovalExpired || ap.ResolvedAt == nil || !ap.ResolvedAt.Equal(markedAt) {
		t.Fatalf("marked approval: status %s, resolvedAt %v; want expired at %v", ap.Status, ap.ResolvedAt, markedAt)
	}
	diff(t, "GetApproval after the mark", f.approval(t, a, "parked/a0"), ap)
	if got := f.sweep(t, f.Clock.Now(), 100, a); len(got) != 0 {
		t.Fatalf("a marked approval is still listed: %v", refIDs(got))
	}
	// Marking again changes nothing.
	f.Clock.Advance(time.Hour)
	again, err := f.sweeper().MarkApprovalExpired(f.ctx, a, "parked/a0")
	must(t, "MarkApprovalExpired again", err)
	diff(t, "second mark", again, ap)
	_, err = f.Hitl.ResolveApproval(f.ctx, a, "parked/a0", approve("rita"))
	wantCode(t, "ResolveApproval of a marked approval", err, agents.CodeHitlRequired)
}

func testSweepMarkOthers(t *testing.T, f *fixture) {
	a, b := f.tenant("a"), f.tenant("b")
	f.storeRun(t, a, "parked", runSpec{status: bindings.RunSuspended, approvals: []time.Duration{time.Hour, time.Minute}})
	_, err := f.Hitl.ResolveApproval(f.ctx, a, "parked/a1", approve("rita"))
	must(t, "ResolveApproval", err)
	f.Clock.Advance(30 * time.Minute)
	// Not yet expired: returned pending, and listed once it expires.
	ap, err := f.sweeper().MarkApprovalExpired(f.ctx, a, "parked/a0")
	must(t, "MarkApprovalExpired of a pending approval", err)
	if ap.Status != bindings.ApprovalPending || ap.ResolvedAt != nil {
		t.Fatalf("pending approval after a mark: status %s, resolvedAt %v", ap.Status, ap.ResolvedAt)
	}
	// Decided: unchanged.
	decided := f.approval(t, a, "parked/a1")
	ap, err = f.sweeper().MarkApprovalExpired(f.ctx, a, "parked/a1")
	must(t, "MarkApprovalExpired of a decided approval", err)
	diff(t, "decided approval after a mark", ap, decided)
	// Unknown, or another tenant's: approval-not-found.
	_, err = f.sweeper().MarkApprovalExpired(f.ctx, a, "nope")
	wantCode(t, "MarkApprovalExpired of an unknown approval", err, agents.CodeApprovalNotFound)
	f.Clock.Advance(time.Hour)
	_, err = f.sweeper().MarkApprovalExpired(f.ctx, b, "parked/a0")
	wantCode(t, "MarkApprovalExpired of another tenant's approval", err, agents.CodeApprovalNotFound)
	if got := refIDs(f.sweep(t, f.Clock.Now(), 100, a, b)); !slices.Equal(got, []string{a + ":parked/a0"}) {
		t.Fatalf("listed %v after the foreign mark", got)
	}
}

func testSweepValidates(t *testing.T, f *fixture) {
	_, err := f.sweeper().ExpiredApprovals(f.ctx, bindings.ExpiredApprovalsInput{Now: time.Now()})
	wantCode(t, "ExpiredApprovals with limit 0", err, agents.CodeInvalidMessage)
}

func testSweepCancelled(t *testing.T, f *fixture) {
	ctx := canceled(t)
	if _, err := f.sweeper().ExpiredApprovals(ctx, bindings.ExpiredApprovalsInput{Now: time.Now(), Limit: 10}); err == nil {
		t.Fatal("ExpiredApprovals with a cancelled context succeeded")
	}
	if _, err := f.sweeper().MarkApprovalExpired(ctx, f.tenant("a"), "x"); err == nil {
		t.Fatal("MarkApprovalExpired with a cancelled context succeeded")
	}
}
