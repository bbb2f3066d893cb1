package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// mailModel asks to send an email until it sees a tool result, then
// answers: every run of a sweep test needs the same two answers whatever
// order the runs call it in. It counts its calls.
type mailModel struct{ calls atomic.Int64 }

func (m *mailModel) ID() string { return "mail-model" }

func (m *mailModel) Models() []bindings.ModelInfo {
	return []bindings.ModelInfo{{ID: "m1", Features: []string{"tool-use"}}}
}

func (m *mailModel) Generate(ctx context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	m.calls.Add(1)
	if last := req.Messages[len(req.Messages)-1]; last.Role == bindings.ChatTool {
		return bindings.GenerateResponse{Text: "Done: " + last.Content, FinishReason: "stop"}, nil
	}
	return bindings.GenerateResponse{
		ToolCalls:    []bindings.ToolCall{{ID: "call_1", Name: "acme.send-email", Arguments: json.RawMessage(`{"to":"legal@globex.test"}`)}},
		FinishReason: "tool_calls",
	}, nil
}

// sweepFixture parks runs on an always_ask email on memstore, with a
// counting model and tool.
type sweepFixture struct {
	t       *testing.T
	clock   *clock
	store   *memstore.Store
	tools   *registry.Tools
	model   *mailModel
	sent    atomic.Int64
	agent   agent.Agent
	policy  *bindings.TenantPolicy
	lookups atomic.Int64
}

// sweepTimeout is the approvals' timeout.
const sweepTimeout = time.Hour

func newSweepFixture(t *testing.T, onTimeout string) *sweepFixture {
	t.Helper()
	f := &sweepFixture{t: t, clock: newClock(), tools: registry.NewTools(), model: &mailModel{}}
	f.store = memstore.New(&memstore.Options{Now: f.clock.Now, CheckTrusted: true})
	err := f.tools.Add(tenant, bindings.ToolDescriptor{ID: "acme.send-email", Version: "2.1.3", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
			f.sent.Add(1)
			return json.RawMessage(`{"sent":true}`), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	timeout := sweepTimeout.Milliseconds()
	a, err := agent.Define(agent.Spec{
		ID: "acme.mailer", Version: "1.0.0", Name: "Mailer", Instructions: "You send emails.",
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		Tools:        []agent.ToolRef{{ID: "acme.send-email", Version: "^2.0.0"}},
		ConversationPolicy: &agent.ConversationPolicy{Hitl: &agent.HitlPolicy{
			TimeoutMs: &timeout,
			Tools:     &agent.ToolGates{Overrides: map[string]agent.ToolGate{"acme.send-email": {Mode: agent.GateAlwaysAsk}}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.agent = a
	if onTimeout != "" {
		f.policy = &bindings.TenantPolicy{Hitl: &bindings.HitlSpec{OnTimeout: onTimeout}}
	}
	return f
}

func (f *sweepFixture) bindings() turn.Bindings {
	return turn.Bindings{
		Providers: bindings.Providers{f.model}, Tools: f.tools,
		Conversations: f.store, Snapshots: f.store, Runs: f.store, Hitl: f.store, Journal: f.store,
		TenantPolicy: f.policy, Now: f.clock.Now,
	}
}

func (f *sweepFixture) lookup(_ context.Context, tenantID, id, version string) (agent.Agent, error) {
	f.lookups.Add(1)
	if tenantID != tenant || id != f.agent.ID || version != f.agent.Version {
		return agent.Agent{}, &agents.AgentNotFoundError{ID: id, Version: version}
	}
	return f.agent, nil
}

// park invokes n turns, each in its own conversation, and returns their
// run ids; each parks on one approval.
func (f *sweepFixture) park(n int) []string {
	f.t.Helper()
	runs := make([]string, n)
	for i := range n {
		conv, err := f.store.OpenConversation(context.Background(), bindings.OpenConversationInput{
			TenantID: tenant, ID: fmt.Sprintf("conv-%d", i), AgentID: f.agent.ID, AgentVersion: f.agent.Version,
		})
		if err != nil {
			f.t.Fatal(err)
		}
		res, err := turn.Invoke(context.Background(), turn.Input{TenantID: tenant, Agent: f.agent, ConversationID: conv.ID, UserMessage: "Send the NDA."}, f.bindings())
		if err != nil || res.Status != turn.StatusSuspended || len(res.Approvals) != 1 {
			f.t.Fatalf("Invoke %d: %+v, %v", i, res, err)
		}
		runs[i] = res.RunID
	}
	return runs
}

func (f *sweepFixture) run(id string) bindings.Run {
	f.t.Helper()
	r, err := f.store.GetRun(context.Background(), tenant, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

func (f *sweepFixture) expire() turn.ExpireStats {
	f.t.Helper()
	st, err := turn.ExpireApprovals(f.t.Context(), f.bindings(), f.lookup, f.clock.Now())
	if err != nil {
		f.t.Fatalf("ExpireApprovals: %v", err)
	}
	return st
}

// TestExpireApprovalsTwoConcurrentSweeps parks runs, lets their approvals
// expire, and runs two sweeps at once: each run is moved to its tenant's
// on-timeout action exactly once (one sweep journals it, the model is
// called once more per run at most, the gated tool never runs), then
// nothing is listed any more.
func TestExpireApprovalsTwoConcurrentSweeps(t *testing.T) {
	const runs = 8
	for _, tc := range []struct {
		onTimeout  string
		wantStatus bindings.RunStatus
		// wantModelCalls per run after the sweep: the park's, plus the
		// answer when the call is denied.
		wantModelCalls int64
		// wantApprovals per run after the sweep.
		wantApprovals int
	}{
		{onTimeout: turn.OnTimeoutDeny, wantStatus: bindings.RunCompleted, wantModelCalls: 2, wantApprovals: 1},
		{onTimeout: turn.OnTimeoutFail, wantStatus: bindings.RunFailed, wantModelCalls: 1, wantApprovals: 1},
		{onTimeout: "", wantStatus: bindings.RunSuspended, wantModelCalls: 1, wantApprovals: 2}, // escalate
	} {
		name := tc.onTimeout
		if name == "" {
			name = "escalate-by-default"
		}
		t.Run(name, func(t *testing.T) {
			f := newSweepFixture(t, tc.onTimeout)
			ids := f.park(runs)
			f.clock.Advance(sweepTimeout + time.Minute)

			var wg sync.WaitGroup
			stats := make([]turn.ExpireStats, 2)
			errs := make([]error, 2)
			for i := range stats {
				wg.Go(func() {
					stats[i], errs[i] = turn.ExpireApprovals(t.Context(), f.bindings(), f.lookup, f.clock.Now())
				})
			}
			wg.Wait()
			moved, failed := 0, 0
			for i, st := range stats {
				if errs[i] != nil {
					t.Fatalf("sweep %d: %v", i, errs[i])
				}
				if st.Moved+st.Skipped+st.Failed != st.Listed {
					t.Errorf("sweep %d: counts do not add up: %+v", i, st)
				}
				moved += st.Moved
				failed += st.Failed
			}
			if moved != runs || failed != 0 {
				t.Fatalf("moved %d approvals and failed %d over two sweeps (%+v), want %d and 0", moved, failed, stats, runs)
			}
			if n := f.sent.Load(); n != 0 {
				t.Errorf("the gated tool ran %d times", n)
			}
			if got, want := f.model.calls.Load(), tc.wantModelCalls*runs; got != want {
				t.Errorf("%d model calls, want %d", got, want)
			}
			for _, id := range ids {
				r := f.run(id)
				if r.Status != tc.wantStatus {
					t.Errorf("run %s: status %s, want %s", id, r.Status, tc.wantStatus)
				}
				j, err := f.store.ReadJournal(t.Context(), tenant, id)
				if err != nil {
					t.Fatal(err)
				}
				approvals := 0
				for _, e := range j {
					if e.Status == bindings.StepParked {
						approvals++
					}
				}
				if approvals != tc.wantApprovals {
					t.Errorf("run %s parked %d approvals, want %d", id, approvals, tc.wantApprovals)
				}
				// The expired approval is marked: it reads expired, with
				// the time of the mark.
				first := id + "/agent-loop/1/dispatch-tools/call_1/approval"
				ap, err := f.store.GetApproval(t.Context(), tenant, first)
				if err != nil || ap.Status != bindings.ApprovalExpired || ap.ResolvedAt == nil {
					t.Errorf("approval %s after the sweep: %+v, %v", first, ap, err)
				}
			}
			// Nothing more to do: a third sweep lists nothing.
			if st := f.expire(); st.Listed != 0 {
				t.Errorf("a sweep after the sweeps listed %+v", st)
			}
			if tc.onTimeout == "" {
				// The escalation asked a senior reviewer; when that one
				// expires too, the next sweep escalates again.
				f.clock.Advance(sweepTimeout + time.Minute)
				if st := f.expire(); st.Moved != runs {
					t.Errorf("second escalation: %+v", st)
				}
			}
		})
	}
}

// TestExpireApprovalsSkipsABusyRunAndRetriesLater: a run another driver
// holds is skipped, not marked, and moved by a later sweep.
func TestExpireApprovalsSkipsABusyRunAndRetriesLater(t *testing.T) {
	f := newSweepFixture(t, turn.OnTimeoutDeny)
	ids := f.park(2)
	f.clock.Advance(sweepTimeout + time.Minute)
	// Another driver holds the first run.
	if _, err := f.store.AcquireLease(t.Context(), bindings.LeaseInput{TenantID: tenant, RunID: ids[0], Owner: "other-worker", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	st := f.expire()
	if st.Listed != 2 || st.Moved != 1 || st.Skipped != 1 || st.Failed != 0 {
		t.Fatalf("sweep with one busy run: %+v", st)
	}
	if r := f.run(ids[0]); r.Status != bindings.RunSuspended {
		t.Fatalf("busy run: status %s", r.Status)
	}
	if err := f.store.ReleaseLease(t.Context(), tenant, ids[0], "other-worker"); err != nil {
		t.Fatal(err)
	}
	st = f.expire()
	if st.Listed != 1 || st.Moved != 1 {
		t.Fatalf("sweep after the lease was released: %+v", st)
	}
	if r := f.run(ids[0]); r.Status != bindings.RunCompleted {
		t.Fatalf("run after the second sweep: status %s", r.Status)
	}
}

func TestExpireApprovalsCountsFailuresAndGoesOn(t *testing.T) {
	f := newSweepFixture(t, turn.OnTimeoutDeny)
	ids := f.park(3)
	f.clock.Advance(sweepTimeout + time.Minute)
	// The agent registry fails for the second run looked up.
	failing := func(context.Context, string, string, string) (agent.Agent, error) {
		if f.lookups.Add(1) == 2 {
			return agent.Agent{}, errors.New("registry unavailable")
		}
		return f.agent, nil
	}
	st, err := turn.ExpireApprovals(t.Context(), f.bindings(), failing, f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if st.Listed != 3 || st.Moved != 2 || st.Failed != 1 || len(st.Failures) != 1 {
		t.Fatalf("sweep with a failing lookup: %+v", st)
	}
	if code := agents.CodeOf(st.Failures[0].Err); code != agents.CodeAgentNotFound {
		t.Errorf("failure code %q, want %q", code, agents.CodeAgentNotFound)
	}
	// The failed approval is not marked: the next sweep moves it.
	st = f.expire()
	if st.Listed != 1 || st.Moved != 1 {
		t.Fatalf("retry sweep: %+v", st)
	}
	for _, id := range ids {
		if r := f.run(id); r.Status != bindings.RunCompleted {
			t.Errorf("run %s: status %s", id, r.Status)
		}
	}
}

func TestExpireApprovalsLeavesApprovalsTheStoreStillReadsPending(t *testing.T) {
	f := newSweepFixture(t, turn.OnTimeoutDeny)
	ids := f.park(1)
	// The sweep's now is past the expiry, the store's clock is not.
	st, err := turn.ExpireApprovals(t.Context(), f.bindings(), f.lookup, f.clock.Now().Add(2*sweepTimeout))
	if err != nil {
		t.Fatal(err)
	}
	if st.Listed != 1 || st.Skipped != 1 || st.Moved != 0 {
		t.Fatalf("sweep ahead of the store's clock: %+v", st)
	}
	if r := f.run(ids[0]); r.Status != bindings.RunSuspended {
		t.Fatalf("run: status %s", r.Status)
	}
	// Not marked: once the store's clock gets there, it is moved.
	f.clock.Advance(sweepTimeout + time.Minute)
	if st := f.expire(); st.Moved != 1 {
		t.Fatalf("sweep once expired: %+v", st)
	}
}

func TestExpireApprovalsNeedsASweeperAndALookup(t *testing.T) {
	f := newSweepFixture(t, "")
	b := f.bindings()
	b.Hitl = struct{ bindings.HitlBinding }{f.store} // hides the sweeper
	_, err := turn.ExpireApprovals(t.Context(), b, f.lookup, f.clock.Now())
	if code := agents.CodeOf(err); code != agents.CodeInvalidBindings {
		t.Errorf("without a sweeper: %v (code %q)", err, code)
	}
	_, err = turn.ExpireApprovals(t.Context(), f.bindings(), nil, f.clock.Now())
	if code := agents.CodeOf(err); code != agents.CodeInvalidBindings {
		t.Errorf("without a lookup: %v (code %q)", err, code)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = turn.ExpireApprovals(ctx, f.bindings(), f.lookup, f.clock.Now())
	if code := agents.CodeOf(err); code != agents.CodeTurnAborted {
		t.Errorf("cancelled: %v (code %q)", err, code)
	}
}

// TestExpireThenPrune is retention end to end on memstore: the sweep
// finishes the expired runs, and Prune then deletes them with their
// journals, snapshots and approvals.
func TestExpireThenPrune(t *testing.T) {
	f := newSweepFixture(t, turn.OnTimeoutDeny)
	ids := f.park(3)
	f.clock.Advance(sweepTimeout + time.Minute)
	if st := f.expire(); st.Moved != 3 {
		t.Fatalf("sweep: %+v", st)
	}
	f.clock.Advance(time.Minute)
	st, err := f.store.Prune(t.Context(), tenant, f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if st.Runs != 3 || st.Snapshots != 3 || st.Approvals != 3 || st.JournalEntries == 0 {
		t.Fatalf("Prune: %+v", st)
	}
	for _, id := range ids {
		if _, err := f.store.GetRun(t.Context(), tenant, id); agents.CodeOf(err) != agents.CodeRunJournalUnavailable {
			t.Errorf("pruned run %s: %v", id, err)
		}
	}
}
