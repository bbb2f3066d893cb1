package bindingstest

import (
	"slices"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// RunApprovalListTests checks a bindings.ApprovalLister: a tenant's
// approvals awaiting a decision oldest first, every other one newest first,
// whether or not a run is parked on them, never another tenant's.
func RunApprovalListTests(t *testing.T, newHarness NewHarness) {
	t.Helper()
	runSuite(t, newHarness, "bindings.ApprovalLister", func(h Harness) bool { return implements[bindings.ApprovalLister](h.Hitl) }, approvalListCases)
}

var approvalListCases = []testCase{
	{name: "PendingApprovalsOldestFirstWithoutARun", clock: true, run: testListPending},
	{name: "DecidedAndExpiredApprovalsNewestFirst", clock: true, run: testListDecided},
	{name: "ListIsTenantScopedAndLimited", run: testListApprovalsTenant},
	{name: "ListValidatesItsInput", run: testListApprovalsValidates},
}

func (f *fixture) listApprovals(t *testing.T, in bindings.ListApprovalsInput) []string {
	t.Helper()
	list, err := f.Hitl.(bindings.ApprovalLister).ListTenantApprovals(f.ctx, in)
	must(t, "ListTenantApprovals", err)
	ids := []string{}
	for _, a := range list {
		if a.Request.TenantID != in.TenantID {
			t.Fatalf("listed approval %s of tenant %s for tenant %s", a.Request.ID, a.Request.TenantID, in.TenantID)
		}
		ids = append(ids, a.Request.ID)
	}
	return ids
}

func testListPending(t *testing.T, f *fixture) {
	a := f.tenant("a")
	for i, id := range []string{"second", "first", "third"} {
		r := f.clockRequest(a, id, time.Hour)
		r.RunID = "" // an approval no run is parked on is listed too
		r.CreatedAt = f.Clock.Now().Add(time.Duration([]int{2, 1, 3}[i]) * time.Second)
		f.request(t, r)
	}
	f.request(t, f.clockRequest(a, "short", time.Minute))
	if got, want := f.listApprovals(t, bindings.ListApprovalsInput{TenantID: a, Pending: true}), []string{"short", "first", "second", "third"}; !slices.Equal(got, want) {
		t.Fatalf("pending = %v, want %v", got, want)
	}
	f.Clock.Advance(2 * time.Minute) // "short" expires
	if _, err := f.Hitl.ResolveApproval(f.ctx, a, "second", bindings.ApprovalDecision{Approved: true, Reviewer: "r1"}); err != nil {
		t.Fatal(err)
	}
	if got, want := f.listApprovals(t, bindings.ListApprovalsInput{TenantID: a, Pending: true}), []string{"first", "third"}; !slices.Equal(got, want) {
		t.Fatalf("pending after a decision and an expiry = %v, want %v", got, want)
	}
}

func testListDecided(t *testing.T, f *fixture) {
	a := f.tenant("a")
	for i, id := range []string{"old", "mid", "new", "open"} {
		r := f.clockRequest(a, id, time.Hour)
		r.CreatedAt = f.Clock.Now().Add(time.Duration(i) * time.Second)
		if id == "mid" {
			r.ExpiresAt = f.Clock.Now().Add(time.Minute)
		}
		f.request(t, r)
	}
	for _, id := range []string{"old", "new"} {
		if _, err := f.Hitl.ResolveApproval(f.ctx, a, id, bindings.ApprovalDecision{Approved: id == "old", Reviewer: "r1"}); err != nil {
			t.Fatal(err)
		}
	}
	f.Clock.Advance(2 * time.Minute)
	list, err := f.Hitl.(bindings.ApprovalLister).ListTenantApprovals(f.ctx, bindings.ListApprovalsInput{TenantID: a})
	must(t, "ListTenantApprovals", err)
	var got []string
	for _, ap := range list {
		got = append(got, ap.Request.ID+":"+string(ap.Status))
	}
	if want := []string{"new:denied", "mid:expired", "old:approved"}; !slices.Equal(got, want) {
		t.Fatalf("decided = %v, want %v", got, want)
	}
}

func testListApprovalsTenant(t *testing.T, f *fixture) {
	a, b := f.tenant("a"), f.tenant("b")
	for i := range 5 {
		r := approvalRequest(a, "a-"+string(rune('0'+i)))
		r.CreatedAt = at(i)
		f.request(t, r)
	}
	f.request(t, approvalRequest(b, "b-0"))
	if got, want := f.listApprovals(t, bindings.ListApprovalsInput{TenantID: a, Pending: true, Limit: 2}), []string{"a-0", "a-1"}; !slices.Equal(got, want) {
		t.Fatalf("limited = %v, want %v", got, want)
	}
	if got := f.listApprovals(t, bindings.ListApprovalsInput{TenantID: b, Pending: true}); !slices.Equal(got, []string{"b-0"}) {
		t.Fatalf("tenant b = %v, want [b-0]", got)
	}
	if got := f.listApprovals(t, bindings.ListApprovalsInput{TenantID: f.tenant("c"), Pending: true}); len(got) != 0 {
		t.Fatalf("a tenant without approvals lists %v", got)
	}
}

func testListApprovalsValidates(t *testing.T, f *fixture) {
	l := f.Hitl.(bindings.ApprovalLister)
	for _, in := range []bindings.ListApprovalsInput{
		{},
		{TenantID: "a\x00"},
		{TenantID: f.tenant("a"), Limit: -1},
		{TenantID: f.tenant("a"), Limit: 1001},
	} {
		_, err := l.ListTenantApprovals(f.ctx, in)
		wantCode(t, "ListTenantApprovals", err, agents.CodeInvalidMessage)
	}
}
