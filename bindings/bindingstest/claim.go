package bindingstest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
)

// RunClaimTests checks what workers need of a store: the one lease rule
// for writes (an expired lease cannot write; every RunBinding), queued
// runs, bindings.RunClaimer (which runs ClaimRuns hands out, in which
// order, once each under any number of concurrent claimers) and
// bindings.RunLister (keyset pages of a tenant's runs, newest first) and
// bindings.RunErrorRecorder (a stuck run's failed drives). The
// claim cases need Harness.Hitl (a parked run's approvals) in the same
// store. A harness whose bindings lack a capability skips its cases.
func RunClaimTests(t *testing.T, newHarness NewHarness) {
	t.Helper()
	t.Run("Lease", func(t *testing.T) {
		runSuite(t, newHarness, "RunBinding", func(h Harness) bool { return h.Runs != nil }, leaseRuleCases)
	})
	t.Run("Claim", func(t *testing.T) {
		runSuite(t, newHarness, "bindings.RunClaimer (with Hitl)", Harness.claimsWithHitl, claimCases)
	})
	t.Run("List", func(t *testing.T) {
		runSuite(t, newHarness, "bindings.RunLister", func(h Harness) bool { return implements[bindings.RunLister](h.Runs) }, listRunsCases)
	})
	t.Run("Parents", func(t *testing.T) {
		runSuite(t, newHarness, "RunBinding", func(h Harness) bool { return h.Runs != nil }, parentCases)
	})
	t.Run("RunErrors", func(t *testing.T) {
		runSuite(t, newHarness, "bindings.RunErrorRecorder", func(h Harness) bool { return implements[bindings.RunErrorRecorder](h.Runs) }, runErrorCases)
	})
}

var leaseRuleCases = []testCase{
	{name: "AnExpiredLeaseCannotAppendEvenIfNobodyTookIt", clock: true, run: testExpiredLeaseCannotWrite},
	{name: "StartRunCreatesAQueuedRunWithoutALease", run: testStartQueued},
	{name: "SetRunStatusAcceptsQueued", run: testSetQueued},
}

var claimCases = []testCase{
	{name: "ClaimTakesQueuedRunsAndLeasesThemAsRunning", clock: true, run: testClaimQueued},
	{name: "ClaimTakesRunningRunsOnlyOnceTheirLeaseIsFreeOrExpired", clock: true, run: testClaimRunning},
	{name: "ClaimTakesSuspendedRunsOnlyOnceEveryApprovalIsDecidedOrExpired", clock: true, run: testClaimSuspended},
	{name: "ClaimNeverTakesFinishedRuns", clock: true, run: testClaimFinished},
	{name: "ClaimTakesTheOldestFirstUpToLimit", clock: true, run: testClaimOrder},
	{name: "AClaimedRunIsNotClaimedAgainUntilItsLeaseExpires", clock: true, run: testClaimLease},
	{name: "ClaimIsRestrictedToTenantIDs", clock: true, run: testClaimTenants},
	{name: "ClaimTakesTheOldestFirstAcrossTenantIDs", clock: true, run: testClaimOldestAcrossTenants},
	{name: "ClaimDefaultsItsLeaseAndLimit", clock: true, run: testClaimDefaults},
	{name: "ClaimWithoutTenantIDsSeesEveryTenant", clock: true, run: testClaimAllTenants},
	{name: "SixteenConcurrentClaimersClaimEachOfAHundredRunsOnce", clock: true, run: testClaimConcurrent},
	{name: "ClaimValidatesItsInput", run: testClaimValidates},
	{name: "ClaimWithCancelledContextFails", run: testClaimCancelled},
}

var listRunsCases = []testCase{
	{name: "ListRunsPagesNewestFirstWithoutSkipsOrRepeats", clock: true, run: testListRunsPages},
	{name: "ListRunsFiltersByStatus", clock: true, run: testListRunsStatus},
	{name: "ListRunsIsTenantScoped", clock: true, run: testListRunsTenant},
	{name: "ListRunsValidatesItsInput", run: testListRunsValidates},
}

// claimsWithHitl reports whether the claim cases apply: Runs is a
// bindings.RunClaimer and the store has Hitl (a parked run's approvals).
func (h Harness) claimsWithHitl() bool {
	return implements[bindings.RunClaimer](h.Runs) && h.Hitl != nil
}

func (f *fixture) claimer() bindings.RunClaimer { return f.Runs.(bindings.RunClaimer) }

// queue creates a queued run without a lease, as turn.Submit does.
func (f *fixture) queue(t *testing.T, tenant, run string) bindings.Run {
	t.Helper()
	return mustReturn(f.Runs.StartRun(f.ctx, bindings.StartRunInput{TenantID: tenant, RunID: run, FlowID: "agent.turn", FlowVersion: "1.1.0", Status: bindings.RunQueued}))(t, "StartRun queued")
}

// claim claims for owner with the case's lease TTL.
func (f *fixture) claim(t *testing.T, owner string, limit int, tenants ...string) []bindings.Run {
	t.Helper()
	runs, err := f.claimer().ClaimRuns(f.ctx, bindings.ClaimRunsInput{Owner: owner, LeaseTTL: leaseTTL, Limit: limit, TenantIDs: tenants})
	must(t, "ClaimRuns", err)
	if runs == nil {
		t.Fatal("ClaimRuns returned a nil slice, want an empty one")
	}
	return runs
}

// claimedIDs are the ids of runs, in order.
func claimedIDs(runs []bindings.Run) []string {
	return project(runs, func(r bindings.Run) string { return r.ID })
}

// park stores a suspended run with approvals (ids run+"/a<i>") expiring
// after each ttl, its lease released.
func (f *fixture) park(t *testing.T, tenant, run string, ttls ...time.Duration) {
	t.Helper()
	f.storeRun(t, tenant, run, runSpec{status: bindings.RunSuspended, approvals: ttls})
}

func testExpiredLeaseCannotWrite(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "r1", "o1")
	f.step(t, a, "r1", "o1", "before", bindings.StepCompleted)
	f.Clock.Advance(leaseTTL + time.Second)
	_, _, err := f.Runs.AppendStep(f.ctx, bindings.AppendStepInput{TenantID: a, RunID: "r1", Owner: "o1", Entry: bindings.JournalEntry{
		Key: "after", Node: "setup", Status: bindings.StepCompleted, Output: json.RawMessage(`{}`),
	}})
	wantCode(t, "AppendStep by the owner of an expired lease", err, agents.CodeRunBusy)
	if d, ok := f.Runs.(journal.Driver); ok {
		_, err := d.Commit(f.ctx, journal.CommitInput{TenantID: a, RunID: "r1", Owner: "o1", Entries: []bindings.JournalEntry{
			{Key: "after", Node: "setup", Status: bindings.StepCompleted},
		}})
		wantCode(t, "Commit by the owner of an expired lease", err, agents.CodeRunBusy)
		_, err = d.Commit(f.ctx, journal.CommitInput{TenantID: a, RunID: "r1", Owner: "o1", Finish: bindings.RunCompleted})
		wantCode(t, "Commit with Finish by the owner of an expired lease", err, agents.CodeRunBusy)
	}
	if got := claimedKeys(f.journal(t, a, "r1")); !slices.Equal(got, []string{"before"}) {
		t.Fatalf("journal after refused appends = %v, want [before]", got)
	}
	if r := f.getRun(t, a, "r1"); r.Status != bindings.RunRunning {
		t.Fatalf("status after a refused FinishRun = %s, want running", r.Status)
	}
	// Renewing (AcquireLease by the same owner) makes it write again.
	_, err = f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "r1", Owner: "o1", TTL: leaseTTL})
	must(t, "AcquireLease renewing an expired lease nobody took", err)
	f.step(t, a, "r1", "o1", "after", bindings.StepCompleted)
}

func claimedKeys(entries []bindings.JournalEntry) []string {
	return project(entries, func(e bindings.JournalEntry) string { return e.Key })
}

func testStartQueued(t *testing.T, f *fixture) {
	a := f.tenant("a")
	r := f.queue(t, a, "q1")
	if r.Status != bindings.RunQueued || r.LeaseOwner != "" {
		t.Fatalf("queued run = status %s owner %q, want queued without owner", r.Status, r.LeaseOwner)
	}
	if got := f.getRun(t, a, "q1"); got.Status != bindings.RunQueued || got.LeaseOwner != "" {
		t.Fatalf("stored queued run = status %s owner %q", got.Status, got.LeaseOwner)
	}
	// Starting it again (a driver taking it) keeps the status.
	r = f.startRun(t, a, "q1", "o1")
	if r.Status != bindings.RunQueued || r.LeaseOwner != "o1" {
		t.Fatalf("restarted queued run = status %s owner %q, want queued leased to o1", r.Status, r.LeaseOwner)
	}
	_, err := f.Runs.StartRun(f.ctx, bindings.StartRunInput{TenantID: a, RunID: "bad", Status: bindings.RunCompleted})
	wantCode(t, "StartRun with status completed", err, agents.CodeInvalidMessage)
}

func testSetQueued(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "r1", "o1")
	must(t, "SetRunStatus queued", f.Runs.SetRunStatus(f.ctx, a, "r1", bindings.RunQueued))
	if got := f.getRun(t, a, "r1"); got.Status != bindings.RunQueued {
		t.Fatalf("status = %s, want queued", got.Status)
	}
}

func testClaimQueued(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.queue(t, a, "q1")
	runs := f.claim(t, "w1", 10, a)
	if len(runs) != 1 {
		t.Fatalf("claimed %v, want [q1]", claimedIDs(runs))
	}
	r := runs[0]
	want := f.Clock.Now().Add(leaseTTL)
	if r.ID != "q1" || r.TenantID != a || r.LeaseOwner != "w1" || !r.LeaseExpiresAt.Equal(want) || r.Status != bindings.RunRunning {
		t.Fatalf("claimed run = %+v, want q1 of %s leased to w1 until %v, running", r, a, want)
	}
	diff(t, "stored claimed run", f.getRun(t, a, "q1"), r)
	// The claimer drives it under the claimed lease: appends are its own.
	f.step(t, a, "q1", "w1", "setup", bindings.StepCompleted)
	if _, err := f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "q1", Owner: "w1", TTL: leaseTTL}); err != nil {
		t.Fatalf("renewing the claimed lease: %v", err)
	}
	_, err := f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "q1", Owner: "w2", TTL: leaseTTL})
	wantCode(t, "AcquireLease of a claimed run by another owner", err, agents.CodeRunBusy)
}

func testClaimRunning(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "live", "o1")
	f.startRun(t, a, "released", "o2")
	must(t, "ReleaseLease", f.Runs.ReleaseLease(f.ctx, a, "released", "o2"))
	if got := claimedIDs(f.claim(t, "w1", 10, a)); !slices.Equal(got, []string{"released"}) {
		t.Fatalf("claimed %v, want [released] (live is leased)", got)
	}
	f.Clock.Advance(leaseTTL + time.Second)
	// Both leases lapsed: live's driver died, and so did w1's claim.
	if got := claimedIDs(f.claim(t, "w2", 10, a)); !slices.Equal(got, []string{"live", "released"}) {
		t.Fatalf("claimed after the leases expired %v, want [live released]", got)
	}
}

func testClaimSuspended(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.park(t, a, "pending", time.Hour)
	f.park(t, a, "approved", time.Hour)
	f.park(t, a, "denied", time.Hour)
	f.park(t, a, "half", time.Hour, time.Hour)
	f.park(t, a, "expiring", time.Minute, 3*time.Hour)
	f.storeRun(t, a, "noapprovals", runSpec{status: bindings.RunSuspended})
	f.storeRun(t, a, "never", runSpec{status: bindings.RunSuspended})
	decide := func(id string, ok bool) {
		d := approve("rev")
		d.Approved = ok
		_, err := f.Hitl.ResolveApproval(f.ctx, a, id, d)
		must(t, "ResolveApproval "+id, err)
	}
	// A zero ExpiresAt never expires.
	req := f.clockRequest(a, "never/a0", 0)
	req.RunID, req.ExpiresAt = "never", time.Time{}
	f.request(t, req)
	decide("approved/a0", true)
	decide("denied/a0", false)
	decide("half/a0", true)
	if got := claimedIDs(f.claim(t, "w1", 10, a)); !slices.Equal(got, []string{"approved", "denied"}) {
		t.Fatalf("claimed %v, want [approved denied]", got)
	}
	for _, id := range []string{"approved", "denied"} { // their drives finished
		must(t, "SetRunStatus", f.Runs.SetRunStatus(f.ctx, a, id, bindings.RunCompleted))
	}
	decide("half/a1", false)
	f.Clock.Advance(2 * time.Hour) // expiring/a0, pending/a0 and half's are past expiry; expiring/a1 not
	if got := claimedIDs(f.claim(t, "w2", 10, a)); !slices.Equal(got, []string{"half", "pending"}) {
		t.Fatalf("claimed after decisions and expiry %v, want [half pending] (one instant: by id)", got)
	}
	for _, id := range []string{"half", "pending"} {
		must(t, "SetRunStatus", f.Runs.SetRunStatus(f.ctx, a, id, bindings.RunCompleted))
	}
	f.Clock.Advance(2 * time.Hour)
	if got := claimedIDs(f.claim(t, "w3", 10, a)); !slices.Equal(got, []string{"expiring"}) {
		t.Fatalf("claimed once every approval expired %v, want [expiring] (never waits on an approval without expiry)", got)
	}
}

func testClaimFinished(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.storeRun(t, a, "done", runSpec{status: bindings.RunCompleted})
	f.storeRun(t, a, "broken", runSpec{status: bindings.RunFailed})
	f.Clock.Advance(leaseTTL + time.Second)
	if got := f.claim(t, "w1", 10, a); len(got) != 0 {
		t.Fatalf("claimed %v, want nothing: finished runs need no driver", claimedIDs(got))
	}
}

func testClaimOrder(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.queue(t, a, "r3")
	f.Clock.Advance(time.Second)
	f.startRun(t, a, "r1", "dead")
	f.Clock.Advance(time.Second)
	f.park(t, a, "r2", time.Hour)
	_, err := f.Hitl.ResolveApproval(f.ctx, a, "r2/a0", approve("rev"))
	must(t, "ResolveApproval", err)
	f.Clock.Advance(time.Second)
	f.queue(t, a, "r0")
	f.Clock.Advance(leaseTTL)
	if got := claimedIDs(f.claim(t, "w1", 2, a)); !slices.Equal(got, []string{"r3", "r1"}) {
		t.Fatalf("first claim of 2 = %v, want the oldest [r3 r1]", got)
	}
	if got := claimedIDs(f.claim(t, "w2", 5, a)); !slices.Equal(got, []string{"r2", "r0"}) {
		t.Fatalf("second claim = %v, want [r2 r0]", got)
	}
}

func testClaimLease(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.queue(t, a, "q1")
	if got := claimedIDs(f.claim(t, "w1", 1, a)); !slices.Equal(got, []string{"q1"}) {
		t.Fatalf("first claim = %v", got)
	}
	if got := f.claim(t, "w2", 1, a); len(got) != 0 {
		t.Fatalf("second claim while leased = %v, want nothing", claimedIDs(got))
	}
	f.Clock.Advance(leaseTTL + time.Second) // w1 died
	got := f.claim(t, "w2", 1, a)
	if len(got) != 1 || got[0].LeaseOwner != "w2" {
		t.Fatalf("claim after w1's lease expired = %+v, want q1 leased to w2", got)
	}
	// The expired owner can no longer write.
	_, _, err := f.Runs.AppendStep(f.ctx, bindings.AppendStepInput{TenantID: a, RunID: "q1", Owner: "w1", Entry: bindings.JournalEntry{Key: "k", Node: "setup", Status: bindings.StepCompleted}})
	wantCode(t, "append by the lapsed claimer", err, agents.CodeRunBusy)
	// Released, it is claimable at once.
	must(t, "ReleaseLease", f.Runs.ReleaseLease(f.ctx, a, "q1", "w2"))
	if got := claimedIDs(f.claim(t, "w3", 1, a)); !slices.Equal(got, []string{"q1"}) {
		t.Fatalf("claim after release = %v, want [q1]", got)
	}
}

func testClaimTenants(t *testing.T, f *fixture) {
	a, b, c := f.tenant("a"), f.tenant("b"), f.tenant("c")
	f.queue(t, a, "ra")
	f.queue(t, b, "rb")
	f.queue(t, c, "rc")
	got := f.claim(t, "w1", 10, b, c)
	slices.SortFunc(got, func(x, y bindings.Run) int { return cmpString(x.TenantID, y.TenantID) })
	if len(got) != 2 || got[0].TenantID != b || got[0].ID != "rb" || got[1].TenantID != c || got[1].ID != "rc" {
		t.Fatalf("claim of tenants b, c = %+v, want rb of b and rc of c", got)
	}
	if r := f.getRun(t, a, "ra"); r.LeaseOwner != "" || r.Status != bindings.RunQueued {
		t.Fatalf("tenant a's run after a claim of b and c = %+v, want untouched", r)
	}
}

func testClaimOldestAcrossTenants(t *testing.T, f *fixture) {
	a, b := f.tenant("a"), f.tenant("b")
	f.queue(t, b, "older")
	f.Clock.Advance(time.Second)
	f.queue(t, a, "newer")
	got := f.claim(t, "w1", 1, a, b)
	if len(got) != 1 || got[0].ID != "older" || got[0].TenantID != b {
		t.Fatalf("claim of 1 over tenants a, b = %v, want b's older run", claimedIDs(got))
	}
}

func testClaimDefaults(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.queue(t, a, "q1")
	f.queue(t, a, "q2")
	runs, err := f.claimer().ClaimRuns(f.ctx, bindings.ClaimRunsInput{Owner: "w1", TenantIDs: []string{a}})
	must(t, "ClaimRuns without lease or limit", err)
	if len(runs) != 1 {
		t.Fatalf("claimed %v, want one run (Limit 0 is 1)", claimedIDs(runs))
	}
	if want := f.Clock.Now().Add(bindings.DefaultClaimLeaseTTL); !runs[0].LeaseExpiresAt.Equal(want) {
		t.Fatalf("lease until %v, want %v (LeaseTTL 0 is DefaultClaimLeaseTTL)", runs[0].LeaseExpiresAt, want)
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func testClaimAllTenants(t *testing.T, f *fixture) {
	a, b := f.tenant("a"), f.tenant("b")
	f.queue(t, a, "ra")
	f.queue(t, b, "rb")
	// A store shared with other cases may hand out their runs too: only
	// this case's runs are checked.
	got := f.claim(t, "w-"+f.suffix, 1000)
	var mine []string
	for _, r := range got {
		if r.TenantID == a || r.TenantID == b {
			mine = append(mine, r.TenantID+"/"+r.ID)
		}
	}
	slices.Sort(mine)
	if want := []string{a + "/ra", b + "/rb"}; !slices.Equal(mine, want) {
		t.Fatalf("claim across tenants took %v of this case's runs, want %v", mine, want)
	}
}

func testClaimConcurrent(t *testing.T, f *fixture) {
	a, b := f.tenant("a"), f.tenant("b")
	const runs, claimers = 100, 16
	for i := range runs {
		tenant := a
		if i%2 == 1 {
			tenant = b
		}
		f.queue(t, tenant, fmt.Sprintf("r%03d", i))
	}
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, claimers)
	for w := range claimers {
		wg.Go(func() {
			owner := fmt.Sprintf("w%d", w)
			for {
				got, err := f.claimer().ClaimRuns(f.ctx, bindings.ClaimRunsInput{Owner: owner, LeaseTTL: leaseTTL, Limit: 3, TenantIDs: []string{a, b}})
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, r := range got {
					counts[r.TenantID+"/"+r.ID]++
					if r.LeaseOwner != owner {
						errs <- fmt.Errorf("claimed run %s leased to %q, want %q", r.ID, r.LeaseOwner, owner)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent claim: %v", err)
	}
	if len(counts) != runs {
		t.Fatalf("%d distinct runs claimed, want %d", len(counts), runs)
	}
	for id, n := range counts {
		if n != 1 {
			t.Errorf("run %s claimed %d times, want once", id, n)
		}
	}
	if got := f.claim(t, "late", 10, a, b); len(got) != 0 {
		t.Fatalf("a claim after every run was claimed got %v", claimedIDs(got))
	}
}

func testClaimValidates(t *testing.T, f *fixture) {
	for _, in := range []bindings.ClaimRunsInput{
		{LeaseTTL: leaseTTL, Limit: 1},
		{Owner: "w", LeaseTTL: leaseTTL, Limit: -1},
		{Owner: "w", LeaseTTL: -time.Second, Limit: 1},
		{Owner: "w\x00", LeaseTTL: leaseTTL, Limit: 1},
		{Owner: strings.Repeat("w", bindings.MaxIDLength+1), LeaseTTL: leaseTTL, Limit: 1},
		{Owner: "w", LeaseTTL: leaseTTL, Limit: 1, TenantIDs: []string{"a\nb"}},
		{Owner: "w", LeaseTTL: leaseTTL, Limit: 1, TenantIDs: []string{strings.Repeat("t", bindings.MaxIDLength+1)}},
	} {
		_, err := f.claimer().ClaimRuns(f.ctx, in)
		wantCode(t, fmt.Sprintf("ClaimRuns(%+v)", in), err, agents.CodeInvalidMessage)
	}
}

func testClaimCancelled(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.queue(t, a, "q1")
	if _, err := f.claimer().ClaimRuns(canceled(t), bindings.ClaimRunsInput{Owner: "w", LeaseTTL: leaseTTL, Limit: 1, TenantIDs: []string{a}}); err == nil {
		t.Fatal("ClaimRuns with a cancelled context succeeded")
	}
	if r := f.getRun(t, a, "q1"); r.LeaseOwner != "" {
		t.Fatalf("a cancelled claim leased the run to %q", r.LeaseOwner)
	}
}

// listPages pages through ListRuns with limit, returning each page's ids.
func (f *fixture) listPages(t *testing.T, in bindings.ListRunsInput) [][]string {
	t.Helper()
	var pages [][]string
	for range 100 {
		page, err := f.Runs.(bindings.RunLister).ListRuns(f.ctx, in)
		must(t, "ListRuns", err)
		pages = append(pages, claimedIDs(page.Runs))
		if page.Next == "" {
			return pages
		}
		if len(page.Runs) == 0 || page.Next != page.Runs[len(page.Runs)-1].ID {
			t.Fatalf("page %v has Next %q, want its last run's id", claimedIDs(page.Runs), page.Next)
		}
		in.After = page.Next
	}
	t.Fatal("ListRuns never reached the last page")
	return nil
}

func testListRunsPages(t *testing.T, f *fixture) {
	a := f.tenant("a")
	for _, id := range []string{"r1", "r2", "r3", "r4", "r5"} {
		f.startRun(t, a, id, "o")
		f.Clock.Advance(time.Second)
	}
	// Two runs created at one instant are ordered by id, descending.
	f.startRun(t, a, "r6b", "o")
	f.startRun(t, a, "r6a", "o")
	got := f.listPages(t, bindings.ListRunsInput{TenantID: a, Limit: 2})
	want := [][]string{{"r6b", "r6a"}, {"r5", "r4"}, {"r3", "r2"}, {"r1"}}
	diff(t, "pages", got, want)
	// A run created while paging sorts before the first page: the rest of
	// the listing neither skips nor repeats a run.
	first, err := f.Runs.(bindings.RunLister).ListRuns(f.ctx, bindings.ListRunsInput{TenantID: a, Limit: 3})
	must(t, "ListRuns", err)
	f.Clock.Advance(time.Second)
	f.startRun(t, a, "r7", "o")
	rest := f.listPages(t, bindings.ListRunsInput{TenantID: a, Limit: 3, After: first.Next})
	diff(t, "pages after a new run", append([][]string{claimedIDs(first.Runs)}, rest...), [][]string{{"r6b", "r6a", "r5"}, {"r4", "r3", "r2"}, {"r1"}})
	page, err := f.Runs.(bindings.RunLister).ListRuns(f.ctx, bindings.ListRunsInput{TenantID: a})
	must(t, "ListRuns default limit", err)
	if len(page.Runs) != 8 || page.Next != "" || page.Runs[0].ID != "r7" {
		t.Fatalf("default page = %v next %q, want all 8 runs from r7", claimedIDs(page.Runs), page.Next)
	}
	diff(t, "listed run", page.Runs[0], f.getRun(t, a, "r7"))
}

func testListRunsStatus(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.queue(t, a, "q")
	f.Clock.Advance(time.Second)
	f.storeRun(t, a, "done", runSpec{status: bindings.RunCompleted})
	f.Clock.Advance(time.Second)
	f.park(t, a, "parked", time.Hour)
	f.Clock.Advance(time.Second)
	f.startRun(t, a, "run", "o")
	got := f.listPages(t, bindings.ListRunsInput{TenantID: a, Statuses: []bindings.RunStatus{bindings.RunQueued, bindings.RunSuspended}})
	diff(t, "queued and suspended runs", got, [][]string{{"parked", "q"}})
	got = f.listPages(t, bindings.ListRunsInput{TenantID: a, Statuses: []bindings.RunStatus{bindings.RunCompleted}, Limit: 1})
	diff(t, "completed runs", got, [][]string{{"done"}})
}

func testListRunsTenant(t *testing.T, f *fixture) {
	a, b := f.tenant("a"), f.tenant("b")
	f.startRun(t, a, "ra", "o")
	f.startRun(t, b, "rb", "o")
	diff(t, "tenant a's runs", f.listPages(t, bindings.ListRunsInput{TenantID: a}), [][]string{{"ra"}})
	_, err := f.Runs.(bindings.RunLister).ListRuns(f.ctx, bindings.ListRunsInput{TenantID: a, After: "rb"})
	wantCode(t, "ListRuns after another tenant's run", err, agents.CodeInvalidMessage)
}

func testListRunsValidates(t *testing.T, f *fixture) {
	a := f.tenant("a")
	for _, in := range []bindings.ListRunsInput{
		{},
		{TenantID: a, Limit: -1},
		{TenantID: a, Statuses: []bindings.RunStatus{"nope"}},
		{TenantID: a, After: "missing"},
		{TenantID: "a\x00"},
		{TenantID: strings.Repeat("t", bindings.MaxIDLength+1)},
		{TenantID: a, After: "r\x01"},
	} {
		_, err := f.Runs.(bindings.RunLister).ListRuns(f.ctx, in)
		wantCode(t, fmt.Sprintf("ListRuns(%+v)", in), err, agents.CodeInvalidMessage)
	}
}
