package bindingstest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// RunQuotaTests checks a bindings.QuotaCounter (Harness.Quotas): windows
// never past their limit, also with sixteen concurrent takers; a unit
// counted once; the window sliding on the clock; tenants and quotas kept
// apart. With a Runs that is a bindings.RunDeferrer and RunClaimer it
// also checks that a deferred run waits for its NotBefore.
func RunQuotaTests(t *testing.T, newHarness NewHarness) {
	t.Helper()
	runSuite(t, newHarness, "bindings.QuotaCounter", func(h Harness) bool { return h.Quotas != nil }, quotaCases)
	runSuite(t, newHarness, "bindings.RunDeferrer", func(h Harness) bool {
		return implements[bindings.RunDeferrer](h.Runs) && implements[bindings.RunClaimer](h.Runs)
	}, deferCases)
}

var quotaCases = []testCase{
	{name: "TakeCountsUpToTheLimitThenRefusesWithRetryAfter", run: testQuotaLimit},
	{name: "SixteenConcurrentTakersAtTheLimitNeverGoOver", run: testQuotaConcurrent},
	{name: "AUnitIsCountedOnceHoweverOftenItIsTakenOrAdded", run: testQuotaIdempotent},
	{name: "TheWindowSlidesOnTheStoreClock", clock: true, run: testQuotaSlides},
	{name: "TenantsAndQuotasAreCountedApart", run: testQuotaIsolated},
	{name: "ACheckOfAmountZeroRecordsNothing", run: testQuotaCheck},
	{name: "AddCountsPastTheLimitAndTakesThenWait", run: testQuotaAdd},
	{name: "UsageListsTheTenantsQuotasWithTheirWindows", clock: true, run: testQuotaUsage},
	{name: "TakeValidatesItsInput", run: testQuotaValidates},
}

var deferCases = []testCase{
	{name: "ADeferredRunIsQueuedAndNotClaimedBeforeNotBefore", clock: true, run: testDeferRun},
}

// quotaStart is the time the cases that pass Now explicitly start at.
var quotaStart = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func calls(name string, limit float64) bindings.Quota {
	return bindings.Quota{Name: name, Scope: bindings.QuotaModelCalls, Limit: limit, WindowSeconds: 60}
}

func (f *fixture) take(t *testing.T, tenant string, q bindings.Quota, unit string, amount float64, now time.Time) bindings.QuotaTakeResult {
	t.Helper()
	res, err := f.Quotas.Take(f.ctx, bindings.QuotaTakeInput{TenantID: tenant, Quota: q, Unit: unit, Amount: amount, Now: now})
	must(t, "Take "+unit, err)
	return res
}

func testQuotaLimit(t *testing.T, f *fixture) {
	a, q := f.tenant("a"), calls("per-minute", 3)
	for i := range 3 {
		now := quotaStart.Add(time.Duration(i) * 10 * time.Second)
		if res := f.take(t, a, q, fmt.Sprint("u", i), 1, now); !res.Allowed || res.Used != float64(i+1) {
			t.Fatalf("take %d: got %+v, want allowed with used %d", i, res, i+1)
		}
	}
	res := f.take(t, a, q, "u3", 1, quotaStart.Add(25*time.Second))
	if res.Allowed || res.Used != 3 {
		t.Fatalf("take past the limit: got %+v, want refused with used 3", res)
	}
	// The first unit (at 0 s) leaves the 60 s window at 60 s: 35 s on.
	if res.RetryAfter != 35*time.Second {
		t.Fatalf("RetryAfter = %v, want 35s", res.RetryAfter)
	}
	if res := f.take(t, a, calls("per-minute", 3), "big", 4, quotaStart.Add(25*time.Second)); res.Allowed || res.RetryAfter != 0 {
		t.Fatalf("an amount above the limit: got %+v, want refused with no RetryAfter", res)
	}
}

func testQuotaConcurrent(t *testing.T, f *fixture) {
	a, q := f.tenant("a"), calls("burst", 5)
	var mu sync.Mutex
	allowed := 0
	concurrently(16, func(i int) {
		res, err := f.Quotas.Take(f.ctx, bindings.QuotaTakeInput{TenantID: a, Quota: q, Unit: fmt.Sprint("c", i), Amount: 1, Now: quotaStart})
		if err != nil {
			t.Errorf("Take %d: %v", i, err)
			return
		}
		if res.Used > 5 {
			t.Errorf("Take %d: used %v, past the limit 5", i, res.Used)
		}
		if res.Allowed {
			mu.Lock()
			allowed++
			mu.Unlock()
		}
	})
	if allowed != 5 {
		t.Fatalf("%d of 16 concurrent takes allowed, want exactly 5", allowed)
	}
	us, err := f.Quotas.QuotaUsage(f.ctx, a, quotaStart)
	must(t, "QuotaUsage", err)
	if len(us) != 1 || us[0].Used != 5 {
		t.Fatalf("usage after the race: %+v, want burst with 5 used", us)
	}
}

func testQuotaIdempotent(t *testing.T, f *fixture) {
	a, q := f.tenant("a"), calls("once", 2)
	for range 3 {
		if res := f.take(t, a, q, "run-1/agent-loop/1/model-call", 1, quotaStart); !res.Allowed || res.Used != 1 {
			t.Fatalf("take of one unit again: got %+v, want allowed with used 1", res)
		}
	}
	f.take(t, a, q, "run-2/agent-loop/1/model-call", 1, quotaStart)
	// The window is full, but a unit counted before goes on.
	if res := f.take(t, a, q, "run-1/agent-loop/1/model-call", 1, quotaStart.Add(time.Second)); !res.Allowed || res.Used != 2 {
		t.Fatalf("a counted unit at the limit: got %+v, want allowed with used 2", res)
	}
	tokens := bindings.Quota{Name: "tokens", Scope: bindings.QuotaTokens, Limit: 1000, WindowSeconds: 60}
	for range 2 {
		res, err := f.Quotas.Add(f.ctx, bindings.QuotaTakeInput{TenantID: a, Quota: tokens, Unit: "run-1/agent-loop/1/model-call", Amount: 300, Now: quotaStart})
		must(t, "Add", err)
		if !res.Allowed || res.Used != 300 {
			t.Fatalf("add of one unit again: got %+v, want used 300", res)
		}
	}
}

func testQuotaSlides(t *testing.T, f *fixture) {
	a, q := f.tenant("a"), calls("sliding", 2)
	f.take(t, a, q, "u1", 1, time.Time{})
	f.Clock.Advance(30 * time.Second)
	f.take(t, a, q, "u2", 1, time.Time{})
	f.Clock.Advance(10 * time.Second)
	res := f.take(t, a, q, "u3", 1, time.Time{})
	if res.Allowed || res.RetryAfter != 20*time.Second {
		t.Fatalf("a full window at 40 s: got %+v, want refused, retry after 20s", res)
	}
	f.Clock.Advance(20 * time.Second) // 60 s: u1 leaves the window exactly now
	if res := f.take(t, a, q, "u3", 1, time.Time{}); !res.Allowed || res.Used != 2 {
		t.Fatalf("after u1 left the window: got %+v, want allowed with used 2", res)
	}
	if res := f.take(t, a, q, "u4", 1, time.Time{}); res.Allowed || res.RetryAfter != 30*time.Second {
		t.Fatalf("full again at 60 s: got %+v, want refused, retry after 30s (u2 leaves at 90 s)", res)
	}
}

func testQuotaIsolated(t *testing.T, f *fixture) {
	a, b, q := f.tenant("a"), f.tenant("b"), calls("shared-name", 1)
	f.take(t, a, q, "u1", 1, quotaStart)
	if res := f.take(t, a, q, "u2", 1, quotaStart); res.Allowed {
		t.Fatalf("tenant a past its limit: got %+v, want refused", res)
	}
	if res := f.take(t, b, q, "u2", 1, quotaStart); !res.Allowed || res.Used != 1 {
		t.Fatalf("tenant b's quota of the same name: got %+v, want allowed with used 1", res)
	}
	if res := f.take(t, a, calls("other", 1), "u2", 1, quotaStart); !res.Allowed {
		t.Fatalf("tenant a's other quota: got %+v, want allowed", res)
	}
	us, err := f.Quotas.QuotaUsage(f.ctx, b, quotaStart)
	must(t, "QuotaUsage b", err)
	if len(us) != 1 || us[0].Quota.Name != "shared-name" || us[0].Used != 1 {
		t.Fatalf("tenant b's usage: %+v, want only its own shared-name with 1 used", us)
	}
}

func testQuotaCheck(t *testing.T, f *fixture) {
	a, q := f.tenant("a"), calls("checked", 2)
	if res := f.take(t, a, q, "check", 0, quotaStart); !res.Allowed || res.Used != 0 {
		t.Fatalf("check of an empty window: got %+v, want allowed, used 0", res)
	}
	f.take(t, a, q, "u1", 1, quotaStart)
	if res := f.take(t, a, q, "check", 0, quotaStart); !res.Allowed || res.Used != 1 {
		t.Fatalf("a check recorded its unit: got %+v, want allowed with used 1", res)
	}
	f.take(t, a, q, "u2", 1, quotaStart.Add(5*time.Second))
	if res := f.take(t, a, q, "check", 0, quotaStart.Add(10*time.Second)); res.Allowed || res.RetryAfter != 50*time.Second {
		t.Fatalf("check of a full window: got %+v, want refused, retry after 50s", res)
	}
}

func testQuotaAdd(t *testing.T, f *fixture) {
	a := f.tenant("a")
	q := bindings.Quota{Name: "spend", Scope: bindings.QuotaCostUsd, Limit: 1.5, WindowSeconds: 3600, OnExceeded: bindings.QuotaWait}
	res, err := f.Quotas.Add(f.ctx, bindings.QuotaTakeInput{TenantID: a, Quota: q, Unit: "call-1", Amount: 1.25, Now: quotaStart})
	must(t, "Add", err)
	if !res.Allowed || res.Used != 1.25 {
		t.Fatalf("Add: got %+v, want used 1.25", res)
	}
	res, err = f.Quotas.Add(f.ctx, bindings.QuotaTakeInput{TenantID: a, Quota: q, Unit: "call-2", Amount: 0.5, Now: quotaStart.Add(time.Minute)})
	must(t, "Add past the limit", err)
	if !res.Allowed || res.Used != 1.75 {
		t.Fatalf("Add past the limit: got %+v, want counted, used 1.75", res)
	}
	// Over the limit, a check waits for the first call to leave the
	// window (at 3600 s): 0.5 is then below 1.5.
	if res := f.take(t, a, q, "call-3", 0, quotaStart.Add(10*time.Minute)); res.Allowed || res.RetryAfter != 50*time.Minute {
		t.Fatalf("check over the limit: got %+v, want refused, retry after 50m", res)
	}
}

func testQuotaUsage(t *testing.T, f *fixture) {
	a := f.tenant("a")
	q := bindings.Quota{Name: "send-email", Scope: bindings.QuotaToolCalls, ToolID: "acme.send-email", Limit: 10, WindowSeconds: 3600, OnExceeded: bindings.QuotaWait}
	start := f.Clock.Now()
	f.take(t, a, q, "u1", 1, time.Time{})
	f.Clock.Advance(time.Minute)
	f.take(t, a, q, "u2", 1, time.Time{})
	f.take(t, a, calls("idle", 5), "u1", 1, time.Time{})
	f.Clock.Advance(59 * time.Minute) // u1 of both left; u2 of send-email stays
	us, err := f.Quotas.QuotaUsage(f.ctx, a, time.Time{})
	must(t, "QuotaUsage", err)
	want := []bindings.QuotaUsage{
		{Quota: calls("idle", 5)},
		{Quota: q, Used: 1, FreesAt: start.Add(time.Minute + time.Hour)},
	}
	if len(us) != len(want) {
		t.Fatalf("usage: %+v, want %+v", us, want)
	}
	for i := range want {
		if us[i].Quota != want[i].Quota || us[i].Used != want[i].Used || !us[i].FreesAt.Equal(want[i].FreesAt) {
			t.Fatalf("usage[%d]: %+v, want %+v", i, us[i], want[i])
		}
	}
}

func testQuotaValidates(t *testing.T, f *fixture) {
	a := f.tenant("a")
	ok := calls("fine", 1)
	for name, in := range map[string]bindings.QuotaTakeInput{
		"no tenant":          {Quota: ok, Unit: "u", Amount: 1},
		"no unit":            {TenantID: a, Quota: ok, Amount: 1},
		"negative amount":    {TenantID: a, Quota: ok, Unit: "u", Amount: -1},
		"no limit":           {TenantID: a, Quota: bindings.Quota{Name: "q", Scope: bindings.QuotaTurns, WindowSeconds: 1}, Unit: "u", Amount: 1},
		"unknown scope":      {TenantID: a, Quota: bindings.Quota{Name: "q", Scope: "requests", Limit: 1, WindowSeconds: 1}, Unit: "u", Amount: 1},
		"no window":          {TenantID: a, Quota: bindings.Quota{Name: "q", Scope: bindings.QuotaTurns, Limit: 1}, Unit: "u", Amount: 1},
		"tool on turns":      {TenantID: a, Quota: bindings.Quota{Name: "q", Scope: bindings.QuotaTurns, ToolID: "t", Limit: 1, WindowSeconds: 1}, Unit: "u", Amount: 1},
		"unknown onExceeded": {TenantID: a, Quota: bindings.Quota{Name: "q", Scope: bindings.QuotaTurns, Limit: 1, WindowSeconds: 1, OnExceeded: "queue"}, Unit: "u", Amount: 1},
	} {
		_, err := f.Quotas.Take(f.ctx, in)
		wantCode(t, "Take with "+name, err, agents.CodeInvalidMessage)
	}
}

func testDeferRun(t *testing.T, f *fixture) {
	a := f.tenant("a")
	_, err := f.Runs.StartRun(f.ctx, bindings.StartRunInput{TenantID: a, RunID: "waits", FlowID: "agent.turn", FlowVersion: "1.1.0", Owner: "driver", LeaseTTL: time.Minute})
	must(t, "StartRun", err)
	d := f.Runs.(bindings.RunDeferrer)
	notBefore := f.Clock.Now().Add(30 * time.Second)
	wantCode(t, "DeferRun by another owner", d.DeferRun(f.ctx, bindings.DeferRunInput{TenantID: a, RunID: "waits", Owner: "other", NotBefore: notBefore}), agents.CodeRunBusy)
	must(t, "DeferRun", d.DeferRun(f.ctx, bindings.DeferRunInput{TenantID: a, RunID: "waits", Owner: "driver", NotBefore: notBefore}))
	run, err := f.Runs.GetRun(f.ctx, a, "waits")
	must(t, "GetRun", err)
	if run.Status != bindings.RunQueued || run.LeaseOwner != "" || !run.NotBefore.Equal(notBefore) {
		t.Fatalf("deferred run: %+v, want queued, no lease, NotBefore %v", run, notBefore)
	}
	claim := func() []bindings.Run {
		runs, err := f.claimer().ClaimRuns(f.ctx, bindings.ClaimRunsInput{Owner: "worker", TenantIDs: []string{a}, Limit: 10})
		must(t, "ClaimRuns", err)
		return runs
	}
	if runs := claim(); len(runs) != 0 {
		t.Fatalf("claim before NotBefore took %+v", runs)
	}
	f.Clock.Advance(30 * time.Second)
	runs := claim()
	if len(runs) != 1 || runs[0].ID != "waits" || runs[0].Status != bindings.RunRunning || !runs[0].NotBefore.IsZero() {
		t.Fatalf("claim at NotBefore: %+v, want the run, running, NotBefore cleared", runs)
	}
	must(t, "SetRunStatus", f.Runs.SetRunStatus(f.ctx, a, "waits", bindings.RunCompleted))
	wantCode(t, "DeferRun of a finished run", d.DeferRun(f.ctx, bindings.DeferRunInput{TenantID: a, RunID: "waits", Owner: "worker", NotBefore: notBefore}), agents.CodeInvalidMessage)
}
