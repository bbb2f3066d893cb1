package bindingstest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
)

// parentCases check what sub-agents need of a store: a child run records
// its parent run and step (StartRunInput.ParentRunID, ParentStepKey),
// ListRuns lists a run's children (ListRunsInput.ParentRunID), and a
// suspended parent is claimable only once none of its children is
// queued, running or suspended. Part of RunClaimTests.
var parentCases = []testCase{
	{name: "StartRunRecordsTheParentAndEveryReadReturnsIt", clock: true, run: testParentRoundTrip},
	{name: "AnExistingRunKeepsItsParent", run: testParentKept},
	{name: "StartRunValidatesTheParent", run: testParentValidates},
	{name: "ListRunsByParentListsItsChildrenInPages", clock: true, run: testListChildren},
	{name: "ASuspendedParentIsClaimableOnlyOnceItsChildrenEnded", clock: true, run: testClaimParent},
	{name: "AParentWithItsOwnPendingApprovalWaitsForItToo", clock: true, run: testClaimParentAndApproval},
	{name: "AnotherTenantsChildNeverCountsAndIsNeverListed", clock: true, run: testParentTenancy},
	{name: "AChildThatEndsWakesItsParentsWatchers", run: testParentWake},
}

// child starts run as a child of parent (step key "call/"+run), leased to
// owner "owner-"+run, in status st (running when empty).
func (f *fixture) child(t *testing.T, tenant, parent, run string, st bindings.RunStatus) bindings.Run {
	t.Helper()
	r, err := f.Runs.StartRun(f.ctx, bindings.StartRunInput{
		TenantID: tenant, RunID: run, FlowID: "agent.turn", FlowVersion: "1.1.0", Owner: "owner-" + run, LeaseTTL: leaseTTL,
		ParentRunID: parent, ParentStepKey: "call/" + run,
	})
	must(t, "StartRun of a child", err)
	if st != "" && st != bindings.RunRunning {
		must(t, "SetRunStatus of a child", f.Runs.SetRunStatus(f.ctx, tenant, run, st))
	}
	must(t, "ReleaseLease of a child", f.Runs.ReleaseLease(f.ctx, tenant, run, "owner-"+run))
	return r
}

// lister is the store's RunLister, or nil.
func (f *fixture) lister() bindings.RunLister {
	l, _ := f.Runs.(bindings.RunLister)
	return l
}

func testParentRoundTrip(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "parent", "o")
	r := f.child(t, a, "parent", "kid", "")
	if r.ParentRunID != "parent" || r.ParentStepKey != "call/kid" {
		t.Fatalf("StartRun returned parent %q step %q, want parent call/kid", r.ParentRunID, r.ParentStepKey)
	}
	got := f.getRun(t, a, "kid")
	if got.ParentRunID != "parent" || got.ParentStepKey != "call/kid" {
		t.Fatalf("GetRun parent %q step %q, want parent call/kid", got.ParentRunID, got.ParentStepKey)
	}
	if top := f.getRun(t, a, "parent"); top.ParentRunID != "" || top.ParentStepKey != "" {
		t.Fatalf("a top-level run has parent %q step %q, want none", top.ParentRunID, top.ParentStepKey)
	}
	if l := f.lister(); l != nil {
		page, err := l.ListRuns(f.ctx, bindings.ListRunsInput{TenantID: a})
		must(t, "ListRuns", err)
		for _, run := range page.Runs {
			if run.ID == "kid" {
				diff(t, "listed child", run, got)
			}
		}
	}
	if c, ok := f.Runs.(bindings.RunClaimer); ok {
		f.Clock.Advance(leaseTTL + time.Second) // the parent's lease lapses too
		runs, err := c.ClaimRuns(f.ctx, bindings.ClaimRunsInput{Owner: "w1", LeaseTTL: leaseTTL, Limit: 10, TenantIDs: []string{a}})
		must(t, "ClaimRuns", err)
		var claimed *bindings.Run
		for i := range runs {
			if runs[i].ID == "kid" {
				claimed = &runs[i]
			}
		}
		if claimed == nil || claimed.ParentRunID != "parent" || claimed.ParentStepKey != "call/kid" {
			t.Fatalf("claimed %+v, want kid with its parent", runs)
		}
	}
}

func testParentKept(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.child(t, a, "p1", "kid", "")
	// Starting it again, naming another parent or none, keeps the first.
	for _, in := range []bindings.StartRunInput{
		{TenantID: a, RunID: "kid", Owner: "o2", LeaseTTL: leaseTTL, ParentRunID: "p2", ParentStepKey: "other"},
		{TenantID: a, RunID: "kid", Owner: "o2", LeaseTTL: leaseTTL},
	} {
		r, err := f.Runs.StartRun(f.ctx, in)
		must(t, "StartRun of an existing child", err)
		if r.ParentRunID != "p1" || r.ParentStepKey != "call/kid" {
			t.Fatalf("StartRun(%+v) returned parent %q step %q, want p1 call/kid", in, r.ParentRunID, r.ParentStepKey)
		}
	}
	if got := f.getRun(t, a, "kid"); got.ParentRunID != "p1" {
		t.Fatalf("stored parent %q, want p1", got.ParentRunID)
	}
	// A top-level run does not become a child.
	f.startRun(t, a, "top", "o")
	r, err := f.Runs.StartRun(f.ctx, bindings.StartRunInput{TenantID: a, RunID: "top", Owner: "o", LeaseTTL: leaseTTL, ParentRunID: "p1", ParentStepKey: "k"})
	must(t, "StartRun of an existing top-level run", err)
	if r.ParentRunID != "" || f.getRun(t, a, "top").ParentRunID != "" {
		t.Fatal("starting an existing top-level run with a parent gave it one")
	}
}

func testParentValidates(t *testing.T, f *fixture) {
	a := f.tenant("a")
	for _, in := range []bindings.StartRunInput{
		{TenantID: a, RunID: "r1", ParentRunID: "p"},                         // no step key
		{TenantID: a, RunID: "r1", ParentStepKey: "call/1"},                  // no parent
		{TenantID: a, RunID: "r1", ParentRunID: "r1", ParentStepKey: "k"},    // its own parent
		{TenantID: a, RunID: "r1", ParentRunID: "p\x00", ParentStepKey: "k"}, // not an id
		{TenantID: a, RunID: "r1", ParentRunID: "p", ParentStepKey: "k\x01"}, // not a step key
	} {
		_, err := f.Runs.StartRun(f.ctx, in)
		wantCode(t, fmt.Sprintf("StartRun(parent %q step %q)", in.ParentRunID, in.ParentStepKey), err, agents.CodeInvalidMessage)
	}
	if _, err := f.Runs.GetRun(f.ctx, a, "r1"); agents.CodeOf(err) != agents.CodeRunJournalUnavailable {
		t.Fatalf("GetRun after refused starts = %v, want no run", err)
	}
	if l := f.lister(); l != nil {
		_, err := l.ListRuns(f.ctx, bindings.ListRunsInput{TenantID: a, ParentRunID: "p\x00"})
		wantCode(t, "ListRuns with an invalid parent run id", err, agents.CodeInvalidMessage)
	}
}

func testListChildren(t *testing.T, f *fixture) {
	if f.lister() == nil {
		t.Skip("the store is not a bindings.RunLister")
	}
	a := f.tenant("a")
	f.startRun(t, a, "p", "o")
	f.startRun(t, a, "other", "o")
	for _, id := range []string{"c1", "c2", "c3", "c4", "c5"} {
		f.Clock.Advance(time.Second)
		f.child(t, a, "p", id, "")
		f.child(t, a, "other", "x-"+id, "") // interleaved: another parent's
	}
	f.child(t, a, "c1", "grandchild", "") // a child's child is not p's
	f.storeRun(t, a, "lonely", runSpec{status: bindings.RunCompleted})
	got := f.listPages(t, bindings.ListRunsInput{TenantID: a, ParentRunID: "p", Limit: 2})
	diff(t, "pages of p's children", got, [][]string{{"c5", "c4"}, {"c3", "c2"}, {"c1"}})
	must(t, "SetRunStatus", f.Runs.SetRunStatus(f.ctx, a, "c3", bindings.RunCompleted))
	got = f.listPages(t, bindings.ListRunsInput{TenantID: a, ParentRunID: "p", Statuses: []bindings.RunStatus{bindings.RunRunning}})
	diff(t, "p's running children", got, [][]string{{"c5", "c4", "c2", "c1"}})
	got = f.listPages(t, bindings.ListRunsInput{TenantID: a, ParentRunID: "c1"})
	diff(t, "c1's children", got, [][]string{{"grandchild"}})
	got = f.listPages(t, bindings.ListRunsInput{TenantID: a, ParentRunID: "lonely"})
	diff(t, "a run without children", got, [][]string{{}})
	// Paging after a run that is not a child still works (keyset): x-c3
	// was created with c3, and sorts before it (ids descending).
	got = f.listPages(t, bindings.ListRunsInput{TenantID: a, ParentRunID: "p", After: "x-c3"})
	diff(t, "p's children after another parent's child", got, [][]string{{"c3", "c2", "c1"}})
}

func testClaimParent(t *testing.T, f *fixture) {
	if !f.claimsWithHitl() {
		t.Skip("the store is not a bindings.RunClaimer with Hitl")
	}
	a := f.tenant("a")
	// Parents suspended on one child each, the child in every status, and
	// a parent with two children, one ended.
	statuses := []bindings.RunStatus{bindings.RunQueued, bindings.RunRunning, bindings.RunSuspended, bindings.RunCompleted, bindings.RunFailed}
	for _, st := range statuses {
		f.storeRun(t, a, "p-"+string(st), runSpec{status: bindings.RunSuspended})
		f.child(t, a, "p-"+string(st), "c-"+string(st), st)
	}
	f.storeRun(t, a, "p-two", runSpec{status: bindings.RunSuspended})
	f.child(t, a, "p-two", "c-two-done", bindings.RunCompleted)
	f.child(t, a, "p-two", "c-two-parked", bindings.RunSuspended)
	// Today's rule stands for a suspended run without approvals or children.
	f.storeRun(t, a, "p-none", runSpec{status: bindings.RunSuspended})

	claimedParents := func(owner string) []string {
		var ids []string
		for _, id := range claimedIDs(f.claim(t, owner, 100, a)) {
			if id[0] == 'p' {
				ids = append(ids, id)
			}
		}
		return ids
	}
	// The queued child and the running one (its lease released) are
	// claimable themselves; the parents of ended children are.
	if got := claimedParents("w1"); !slices.Equal(got, []string{"p-completed", "p-failed"}) {
		t.Fatalf("claimed parents %v, want [p-completed p-failed] (the others' children have not ended)", got)
	}
	// The children w1 claimed end; the suspended ones still park their parents.
	for _, id := range []string{"c-queued", "c-running"} {
		must(t, "SetRunStatus", f.Runs.SetRunStatus(f.ctx, a, id, bindings.RunCompleted))
	}
	if got := claimedParents("w2"); !slices.Equal(got, []string{"p-queued", "p-running"}) {
		t.Fatalf("claimed parents after their children completed %v, want [p-queued p-running]", got)
	}
	must(t, "SetRunStatus", f.Runs.SetRunStatus(f.ctx, a, "c-suspended", bindings.RunFailed))
	if got := claimedParents("w3"); !slices.Equal(got, []string{"p-suspended"}) {
		t.Fatalf("claimed parents after a child failed %v, want [p-suspended] (p-two still has a parked child)", got)
	}
	must(t, "SetRunStatus", f.Runs.SetRunStatus(f.ctx, a, "c-two-parked", bindings.RunCompleted))
	if got := claimedParents("w4"); !slices.Equal(got, []string{"p-two"}) {
		t.Fatalf("claimed parents once both children ended %v, want [p-two]", got)
	}
	if r := f.getRun(t, a, "p-none"); r.Status != bindings.RunSuspended || r.LeaseOwner != "" {
		t.Fatalf("a suspended run with neither approvals nor children = %+v, want suspended and unclaimed", r)
	}
}

func testClaimParentAndApproval(t *testing.T, f *fixture) {
	if !f.claimsWithHitl() {
		t.Skip("the store is not a bindings.RunClaimer with Hitl")
	}
	a := f.tenant("a")
	f.park(t, a, "p", time.Hour)
	f.child(t, a, "p", "kid", bindings.RunCompleted)
	if got := claimedIDs(f.claim(t, "w1", 10, a)); len(got) != 0 {
		t.Fatalf("claimed %v, want nothing: p's own approval is pending", got)
	}
	_, err := f.Hitl.ResolveApproval(f.ctx, a, "p/a0", approve("rev"))
	must(t, "ResolveApproval", err)
	if got := claimedIDs(f.claim(t, "w1", 10, a)); !slices.Equal(got, []string{"p"}) {
		t.Fatalf("claimed %v, want [p]: its approval is decided and its child ended", got)
	}
	// Decided approvals do not make a parent with a parked child claimable.
	f.park(t, a, "q", time.Hour)
	f.child(t, a, "q", "qkid", bindings.RunSuspended)
	_, err = f.Hitl.ResolveApproval(f.ctx, a, "q/a0", approve("rev"))
	must(t, "ResolveApproval", err)
	if got := claimedIDs(f.claim(t, "w2", 10, a)); len(got) != 0 {
		t.Fatalf("claimed %v, want nothing: q's child is parked", got)
	}
}

func testParentTenancy(t *testing.T, f *fixture) {
	a, b := f.tenant("a"), f.tenant("b")
	// Tenant b has a run with the parent's id and a parked child of it,
	// and a child naming a's parent's id; neither is a's.
	f.storeRun(t, a, "p", runSpec{status: bindings.RunSuspended})
	f.child(t, a, "p", "kid", bindings.RunCompleted)
	f.storeRun(t, b, "p", runSpec{status: bindings.RunSuspended})
	f.child(t, b, "p", "kid-b", bindings.RunSuspended)
	if l := f.lister(); l != nil {
		diff(t, "a's children of p", f.listPages(t, bindings.ListRunsInput{TenantID: a, ParentRunID: "p"}), [][]string{{"kid"}})
		diff(t, "b's children of p", f.listPages(t, bindings.ListRunsInput{TenantID: b, ParentRunID: "p"}), [][]string{{"kid-b"}})
	}
	if !f.claimsWithHitl() {
		return
	}
	// a's p is claimable (its own child ended; b's parked one is not
	// a's), b's p is not.
	if got := claimedIDs(f.claim(t, "w1", 10, a, b)); !slices.Equal(got, []string{"p"}) {
		t.Fatalf("claimed %v, want [p] of tenant a", got)
	}
	if r := f.getRun(t, a, "p"); r.LeaseOwner != "w1" {
		t.Fatalf("a's p leased to %q, want w1", r.LeaseOwner)
	}
	if r := f.getRun(t, b, "p"); r.Status != bindings.RunSuspended || r.LeaseOwner != "" {
		t.Fatalf("b's p = %+v, want suspended and unclaimed (its child is parked)", r)
	}
}

func testParentWake(t *testing.T, f *fixture) {
	w, ok := f.Runs.(bindings.RunWatcher)
	if !ok {
		t.Skip("the store is not a bindings.RunWatcher")
	}
	a := f.tenant("a")
	f.storeRun(t, a, "p", runSpec{status: bindings.RunSuspended})
	f.child(t, a, "p", "kid", bindings.RunSuspended)
	ch, err := w.WatchRuns(f.ctx)
	if err != nil {
		t.Skipf("the store cannot watch here: %v", err)
	}
	// A watcher may start late (LISTEN): change the child until the
	// parent's wake-up arrives, each time ending it anew.
	deadline := time.After(10 * time.Second)
	for i := 0; ; i++ {
		must(t, "SetRunStatus", f.Runs.SetRunStatus(f.ctx, a, "kid", bindings.RunSuspended))
		must(t, "SetRunStatus", f.Runs.SetRunStatus(f.ctx, a, "kid", bindings.RunCompleted))
		tick := time.After(200 * time.Millisecond)
		for {
			select {
			case c := <-ch:
				if c.TenantID == a && c.RunID == "p" && c.Claimable {
					return
				}
				continue
			case <-tick:
			case <-deadline:
				t.Fatal("no claimable RunChange for the parent after its child completed")
			}
			break
		}
	}
}

// testDriverParent: a journal.Create with a parent creates a child run,
// whichever lease mode opens it.
func testDriverParent(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	for i, mode := range []journal.LeaseMode{journal.LeaseNow, journal.LeaseOnWrite} {
		run := fmt.Sprintf("kid-%d", i)
		c := create(a, run)
		c.ParentRunID, c.ParentStepKey = "parent", "agent-loop/1/dispatch-tools/call-1/subagent"
		d, err := f.d.Open(f.ctx, journal.OpenInput{TenantID: a, RunID: run, Owner: "w1", TTL: leaseTTL, Lease: mode, Create: c})
		must(t, "Open of a child run", err)
		if d.Pending != nil {
			_, err := f.d.Commit(f.ctx, journal.CommitInput{TenantID: a, RunID: run, Owner: "w1", Pending: d.Pending,
				Entries: []bindings.JournalEntry{dentry("setup", bindings.StepCompleted, `{"n":1}`)}})
			must(t, "Commit of the pending open", err)
		} else if d.Run.ParentRunID != "parent" || d.Run.ParentStepKey != c.ParentStepKey {
			t.Fatalf("mode %d: opened run has parent %q step %q, want the Create's", mode, d.Run.ParentRunID, d.Run.ParentStepKey)
		}
		r := f.getRun(t, a, run)
		if r.ParentRunID != "parent" || r.ParentStepKey != c.ParentStepKey {
			t.Fatalf("mode %d: stored run has parent %q step %q, want the Create's", mode, r.ParentRunID, r.ParentStepKey)
		}
		// Opening it again (a resume) returns the stored parent.
		d, err = f.d.Open(f.ctx, journal.OpenInput{TenantID: a, RunID: run, Owner: "w1", TTL: leaseTTL, Create: c})
		must(t, "Open of the child again", err)
		if d.Run.ParentRunID != "parent" || d.Run.ParentStepKey != c.ParentStepKey {
			t.Fatalf("mode %d: reopened run has parent %q step %q, want the stored ones", mode, d.Run.ParentRunID, d.Run.ParentStepKey)
		}
	}
	bad := create(a, "orphan")
	bad.ParentStepKey = "k" // without a parent run id
	_, err := f.d.Open(f.ctx, journal.OpenInput{TenantID: a, RunID: "orphan", Owner: "w1", TTL: leaseTTL, Create: bad})
	wantCode(t, "Open of a Create with a step key but no parent", err, agents.CodeInvalidMessage)
	if _, err := f.Snapshots.Read(f.ctx, a, "orphan"); agents.CodeOf(err) != agents.CodeRunSnapshotMissing {
		t.Fatalf("snapshot Read after a refused Open = %v, want none stored", err)
	}
}
