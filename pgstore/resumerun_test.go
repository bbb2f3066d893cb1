package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn"
)

// TestResumeOfAParkedTurnReadsItsApprovalsWithTheLease resumes a turn
// parked on an approved tool call, through the Store and through a
// wrapper embedding it (which reads the approval with GetApproval): both
// run the approved call once and complete alike, and the Store's Resume
// reads the approval in ReopenRun's round trip, one round trip fewer.
func TestResumeOfAParkedTurnReadsItsApprovalsWithTheLease(t *testing.T) {
	pool, rt := tracedPool(t, 1)
	s := New(pool, nil)
	f := newTurnFixture(t, s)
	a := lookupAgent(t, agent.GateAlwaysAsk)
	hour := time.Hour.Milliseconds()
	ctx := context.Background()
	resume := func(binding func(b *turn.Bindings)) (turn.Result, int) {
		b := f.bindings()
		b.TenantPolicy = &bindings.TenantPolicy{Hitl: &bindings.HitlSpec{MaxTimeoutMs: &hour, OnTimeout: turn.OnTimeoutDeny}}
		binding(&b)
		res, err := f.invoke(ctx, b, a, f.open(t, a))
		if err != nil || res.Status != turn.StatusSuspended || len(res.Approvals) != 1 {
			t.Fatalf("Invoke = %+v, %v; want one approval pending", res, err)
		}
		// Still pending: Resume waits, and calls nothing.
		if _, err := turn.Resume(ctx, turn.ResumeInput{TenantID: turnTenant, RunID: res.RunID, Agent: a}, b); err == nil {
			t.Fatal("Resume of a turn whose approval is pending did not fail")
		}
		if _, err := s.ResolveApproval(ctx, turnTenant, res.Approvals[0].ID, bindings.ApprovalDecision{Approved: true, Reviewer: "rev"}); err != nil {
			t.Fatal(err)
		}
		before := f.executed.Load()
		rt.reset()
		done, err := turn.Resume(ctx, turn.ResumeInput{TenantID: turnTenant, RunID: res.RunID, Agent: a}, b)
		if err != nil || done.Status != turn.StatusCompleted {
			t.Fatalf("Resume = %+v, %v", done, err)
		}
		_, batches, _, _ := rt.snapshot()
		if n := f.executed.Load() - before; n != 1 {
			t.Fatalf("the approved tool ran %d times, want once", n)
		}
		return done, batches
	}
	direct, directTrips := resume(func(*turn.Bindings) {})
	wrapped, wrappedTrips := resume(func(b *turn.Bindings) {
		w := embeddedStore{f.store}
		b.Runs, b.Snapshots, b.Conversations, b.Hitl, b.Journal = w, w, w, w, nil
	})
	if direct.Response.Content != wrapped.Response.Content || direct.Usage.ToolCalls != wrapped.Usage.ToolCalls || len(direct.Appended) != len(wrapped.Appended) {
		t.Errorf("the resumed turns differ: %+v and %+v", direct, wrapped)
	}
	if directTrips >= wrappedTrips || directTrips > maxResumeRoundTrips {
		t.Errorf("Resume took %d round trips through the Store, %d through the wrapper (journal.Adapt); want fewer, at most %d", directTrips, wrappedTrips, maxResumeRoundTrips)
	}
}

// maxResumeRoundTrips bounds the round trips of the Resume of a turn
// parked on one approved tool call: the reopen with the approvals,
// the call's started entry with the approval's
// outcome, the tool's result and message with the next model call's
// started entry, and the final message with the end of the drive.
const maxResumeRoundTrips = 4
