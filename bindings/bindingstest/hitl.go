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

// RunHitlTests checks a HitlBinding: requests are idempotent per (tenant,
// id), a decision is taken once (the first wins, also under concurrency), a
// pending approval past its expiry reads expired and can no longer be
// decided, and unknown or foreign approvals are approval-not-found.
func RunHitlTests(t *testing.T, newHarness NewHarness) {
	t.Helper()
	runSuite(t, newHarness, "HitlBinding", func(h Harness) bool { return h.Hitl != nil }, hitlCases)
}

var hitlCases = []testCase{
	{name: "RequestStoresAPendingApproval", run: testRequestApproval},
	{name: "RequestIsIdempotentPerID", run: testRequestIdempotent},
	{name: "RequestWithZeroCreatedAtUsesNow", clock: true, run: testRequestNow},
	{name: "RequestRequiresTenantAndID", run: testRequestValidates},
	{name: "GetUnknownIsApprovalNotFound", run: testGetApprovalUnknown},
	{name: "ResolveDecidesOnceFirstDecisionWins", run: testResolveOnce},
	{name: "ConcurrentResolvesAgreeOnOneDecision", run: testResolveConcurrent},
	{name: "DenyIsStoredAsDenied", run: testResolveDeny},
	{name: "ResolveUnknownIsApprovalNotFound", run: testResolveUnknown},
	{name: "PendingPastExpiryReadsExpired", clock: true, run: testApprovalExpires},
	{name: "ResolveOfExpiredIsHitlRequired", clock: true, run: testResolveExpired},
	{name: "DecisionBeforeExpiryStaysAfterIt", clock: true, run: testResolvedDoesNotExpire},
	{name: "TenantIsolation", run: testHitlTenantIsolation},
	{name: "ReturnedValuesAreCopies", run: testHitlCopies},
	{name: "CancelledContextFails", run: testHitlCancelled},
}

// farFuture is the expiry of requests that must not expire during a case,
// whatever the harness clock reads.
var farFuture = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

func approvalRequest(tenant, id string) bindings.ApprovalRequest {
	return bindings.ApprovalRequest{
		TenantID: tenant, ID: id, RunID: "run-1", ConversationID: "conv-1", ToolCallID: "call_1",
		ToolID: "acme.send-email", ToolVersion: "2.1.3", Arguments: json.RawMessage(`{"to":"legal@globex.test","subject":"NDA"}`),
		ReviewerRole: "standard", Reason: "always_ask", CreatedAt: at(0), ExpiresAt: farFuture,
	}
}

// clockRequest is a request created at the harness clock's now, expiring
// after ttl.
func (f *fixture) clockRequest(tenant, id string, ttl time.Duration) bindings.ApprovalRequest {
	r := approvalRequest(tenant, id)
	r.CreatedAt = f.Clock.Now()
	r.ExpiresAt = f.Clock.Now().Add(ttl)
	return r
}

func (f *fixture) request(t *testing.T, r bindings.ApprovalRequest) bindings.Approval {
	t.Helper()
	return mustReturn(f.Hitl.RequestApproval(f.ctx, r))(t, "RequestApproval")
}

func (f *fixture) approval(t *testing.T, tenant, id string) bindings.Approval {
	t.Helper()
	return mustReturn(f.Hitl.GetApproval(f.ctx, tenant, id))(t, "GetApproval")
}

func approve(reviewer string) bindings.ApprovalDecision {
	return bindings.ApprovalDecision{Approved: true, Reviewer: reviewer, ReviewerRoles: []string{"standard"}, Comment: "ok by " + reviewer}
}

func testRequestApproval(t *testing.T, f *fixture) {
	a := f.tenant("a")
	req := approvalRequest(a, "ap-1")
	want := bindings.Approval{Request: req, Status: bindings.ApprovalPending}
	diff(t, "requested", f.request(t, req), want)
	diff(t, "read back", f.approval(t, a, "ap-1"), want)
}

func testRequestIdempotent(t *testing.T, f *fixture) {
	a := f.tenant("a")
	first := f.request(t, approvalRequest(a, "ap-1"))
	again := approvalRequest(a, "ap-1")
	again.ReviewerRole = "admin"
	again.Arguments = json.RawMessage(`{"to":"someone-else"}`)
	diff(t, "second request", f.request(t, again), first)
	_, err := f.Hitl.ResolveApproval(f.ctx, a, "ap-1", approve("rev-1"))
	must(t, "ResolveApproval", err)
	resolved := f.approval(t, a, "ap-1")
	diff(t, "request after resolution", f.request(t, approvalRequest(a, "ap-1")), resolved)
	if resolved.Status != bindings.ApprovalApproved {
		t.Fatalf("a repeated request reset the approval to %q", resolved.Status)
	}
}

func testRequestNow(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.Clock.Advance(time.Hour)
	req := approvalRequest(a, "ap-1")
	req.CreatedAt = time.Time{}
	req.ExpiresAt = f.Clock.Now().Add(time.Hour)
	ap := f.request(t, req)
	if !ap.Request.CreatedAt.Equal(f.Clock.Now()) {
		t.Fatalf("CreatedAt = %v, want the clock's now %v", ap.Request.CreatedAt, f.Clock.Now())
	}
}

func testRequestValidates(t *testing.T, f *fixture) {
	_, err := f.Hitl.RequestApproval(f.ctx, approvalRequest("", "ap-1"))
	wantCode(t, "no tenant", err, agents.CodeInvalidMessage)
	_, err = f.Hitl.RequestApproval(f.ctx, approvalRequest(f.tenant("a"), ""))
	wantCode(t, "no id", err, agents.CodeInvalidMessage)
}

func testGetApprovalUnknown(t *testing.T, f *fixture) {
	_, err := f.Hitl.GetApproval(f.ctx, f.tenant("a"), "missing")
	wantCode(t, "GetApproval", err, agents.CodeApprovalNotFound)
	var nf *agents.ApprovalNotFoundError
	if !errors.As(err, &nf) || nf.ApprovalID != "missing" {
		t.Fatalf("GetApproval: %v is not an *agents.ApprovalNotFoundError naming %q", err, "missing")
	}
}

func testResolveOnce(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.request(t, approvalRequest(a, "ap-1"))
	got, err := f.Hitl.ResolveApproval(f.ctx, a, "ap-1", approve("rev-1"))
	must(t, "first decision", err)
	if got.Status != bindings.ApprovalApproved || got.Reviewer != "rev-1" || got.Comment != "ok by rev-1" || got.ResolvedAt == nil {
		t.Fatalf("approved: %+v", got)
	}
	if f.Clock != nil && !got.ResolvedAt.Equal(f.Clock.Now()) {
		t.Fatalf("ResolvedAt = %v, want the clock's now %v", got.ResolvedAt, f.Clock.Now())
	}
	diff(t, "read back", f.approval(t, a, "ap-1"), got)
	second, err := f.Hitl.ResolveApproval(f.ctx, a, "ap-1", bindings.ApprovalDecision{Approved: false, Reviewer: "rev-2", Comment: "no"})
	must(t, "second decision", err)
	diff(t, "second decision returns the first", second, got)
	diff(t, "stored", f.approval(t, a, "ap-1"), got)
}

func testResolveConcurrent(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.request(t, approvalRequest(a, "ap-1"))
	const n = 16
	got := make([]bindings.Approval, n)
	errs := make([]error, n)
	concurrently(n, func(i int) {
		got[i], errs[i] = f.Hitl.ResolveApproval(f.ctx, a, "ap-1", bindings.ApprovalDecision{Approved: i%2 == 0, Reviewer: fmt.Sprintf("rev-%d", i)})
	})
	stored := f.approval(t, a, "ap-1")
	if stored.Status == bindings.ApprovalPending {
		t.Fatal("still pending after 16 decisions")
	}
	for i := range n {
		must(t, fmt.Sprintf("decision %d", i), errs[i])
		diff(t, fmt.Sprintf("decision %d", i), got[i], stored)
	}
}

func testResolveDeny(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.request(t, approvalRequest(a, "ap-1"))
	got, err := f.Hitl.ResolveApproval(f.ctx, a, "ap-1", bindings.ApprovalDecision{Approved: false, Reviewer: "rev-1", Comment: "not this recipient"})
	must(t, "ResolveApproval", err)
	if got.Status != bindings.ApprovalDenied || got.Comment != "not this recipient" {
		t.Fatalf("denied: %+v", got)
	}
	diff(t, "read back", f.approval(t, a, "ap-1"), got)
}

func testResolveUnknown(t *testing.T, f *fixture) {
	_, err := f.Hitl.ResolveApproval(f.ctx, f.tenant("a"), "missing", approve("rev-1"))
	wantCode(t, "ResolveApproval", err, agents.CodeApprovalNotFound)
}

func testApprovalExpires(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.request(t, f.clockRequest(a, "ap-1", time.Hour))
	f.Clock.Advance(time.Hour - time.Second)
	if got := f.approval(t, a, "ap-1").Status; got != bindings.ApprovalPending {
		t.Fatalf("status %q before expiry, want pending", got)
	}
	f.Clock.Advance(2 * time.Second)
	if got := f.approval(t, a, "ap-1").Status; got != bindings.ApprovalExpired {
		t.Fatalf("status %q after expiry, want expired", got)
	}
}

func testResolveExpired(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.request(t, f.clockRequest(a, "ap-1", time.Hour))
	f.Clock.Advance(time.Hour + time.Second)
	_, err := f.Hitl.ResolveApproval(f.ctx, a, "ap-1", approve("rev-1"))
	wantCode(t, "resolve after expiry", err, agents.CodeHitlRequired)
	if got := f.approval(t, a, "ap-1").Status; got != bindings.ApprovalExpired {
		t.Fatalf("status %q after a refused late decision, want expired", got)
	}
}

func testResolvedDoesNotExpire(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.request(t, f.clockRequest(a, "ap-1", time.Hour))
	_, err := f.Hitl.ResolveApproval(f.ctx, a, "ap-1", approve("rev-1"))
	must(t, "ResolveApproval", err)
	f.Clock.Advance(48 * time.Hour)
	if got := f.approval(t, a, "ap-1").Status; got != bindings.ApprovalApproved {
		t.Fatalf("status %q long after an approval, want approved", got)
	}
}

func testHitlTenantIsolation(t *testing.T, f *fixture) {
	a, b := f.tenant("a"), f.tenant("b")
	f.request(t, approvalRequest(a, "ap-1"))
	_, err := f.Hitl.GetApproval(f.ctx, b, "ap-1")
	wantCode(t, "get as b", err, agents.CodeApprovalNotFound)
	_, err = f.Hitl.ResolveApproval(f.ctx, b, "ap-1", approve("intruder"))
	wantCode(t, "resolve as b", err, agents.CodeApprovalNotFound)
	if got := f.approval(t, a, "ap-1").Status; got != bindings.ApprovalPending {
		t.Fatalf("b's decision changed a's approval to %q", got)
	}
	reqB := approvalRequest(b, "ap-1")
	reqB.ReviewerRole = "admin"
	if got := f.request(t, reqB); got.Request.ReviewerRole != "admin" || got.Request.TenantID != b {
		t.Fatalf("b's request of the same id returned %+v", got.Request)
	}
}

func testHitlCopies(t *testing.T, f *fixture) {
	a := f.tenant("a")
	req := approvalRequest(a, "ap-1")
	ap := f.request(t, req)
	want := bindings.Approval{Request: approvalRequest(a, "ap-1"), Status: bindings.ApprovalPending}
	req.Arguments[2] = 'X'
	ap.Request.Arguments[3] = 'Y'
	got := f.approval(t, a, "ap-1")
	got.Request.Arguments[4] = 'Z'
	diff(t, "after mutating returned approvals", f.approval(t, a, "ap-1"), want)
	r, err := f.Hitl.ResolveApproval(f.ctx, a, "ap-1", approve("rev-1"))
	must(t, "ResolveApproval", err)
	resolvedAt := *r.ResolvedAt
	*r.ResolvedAt = resolvedAt.Add(time.Hour)
	if got := f.approval(t, a, "ap-1").ResolvedAt; got == nil || !got.Equal(resolvedAt) {
		t.Fatalf("ResolvedAt = %v after mutating a returned copy, want %v", got, resolvedAt)
	}
}

func testHitlCancelled(t *testing.T, f *fixture) {
	if _, err := f.Hitl.RequestApproval(canceled(t), approvalRequest(f.tenant("a"), "ap-1")); err == nil {
		t.Fatal("RequestApproval with a cancelled context succeeded")
	}
}
