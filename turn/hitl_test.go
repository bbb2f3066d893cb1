package turn_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// TestParkThenApprove: no tool runs before its approval; the resumed turn,
// from fresh bindings, runs the approved call once and finishes with usage
// and messages counted across the park.
func TestParkThenApprove(t *testing.T) {
	f := newFixture(t, emailThenAnswer(), nil)
	res := f.mustInvoke(t, f.bindings(), "Send the draft to Globex.")
	if res.Status != turn.StatusSuspended || len(res.Approvals) != 1 {
		t.Fatalf("result = %+v, want suspended with one approval", res)
	}
	if f.log.total() != 0 {
		t.Fatalf("a tool ran before its approval: %v", f.log.calls)
	}
	a := res.Approvals[0]
	if a.ToolID != "acme.send-email" || a.ToolVersion != "2.1.3" || a.ReviewerRole != turn.RoleStandard ||
		a.ID != res.RunID+"/agent-loop/1/dispatch-tools/call_1/approval" || !a.ExpiresAt.Equal(a.CreatedAt.Add(24*time.Hour)) {
		t.Errorf("approval = %+v", a)
	}
	run, _ := f.store.GetRun(t.Context(), tenant, res.RunID)
	if run.Status != bindings.RunSuspended {
		t.Errorf("run status = %s, want suspended", run.Status)
	}
	if diff := cmp.Diff([]string{"turn.started", "retrieval.completed", "model.call.started", "model.call.completed", "approval.requested", "turn.suspended"}, f.events.kinds()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// A newer tool build registered meanwhile is not used: the journal
	// holds the resolved versions.
	f.addTool("acme.send-email", "2.1.9", emailSchema, func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
		t.Error("the resumed turn used a tool build registered after setup")
		return json.RawMessage(`{}`), nil
	})
	f.decide(res.Approvals, true)
	f.events.reset()
	final, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, f.bindings())
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if final.Status != turn.StatusCompleted || final.Response.Content != "I sent the draft to Globex's legal team." {
		t.Fatalf("final = %+v", final)
	}
	if n := f.log.count("acme.send-email"); n != 1 {
		t.Errorf("send-email ran %d times, want 1", n)
	}
	if ids := f.log.requestIDs("acme.send-email"); ids[0] != res.RunID+"/agent-loop/1/dispatch-tools/call_1" {
		t.Errorf("request id = %q", ids[0])
	}
	if final.Usage.ModelCalls != 2 || final.Usage.InputTokens != 300 || final.Usage.ToolCalls != 1 {
		t.Errorf("usage across the park = %+v", final.Usage)
	}
	if len(final.Appended) != 4 {
		t.Errorf("appended %d messages, want 4 (user, agent call, tool, agent)", len(final.Appended))
	}
	// The resumed drive emits only its own events.
	if diff := cmp.Diff([]string{"turn.started", "tool.started", "tool.completed", "model.call.started", "model.call.completed", "agent.message", "turn.completed"}, f.events.kinds()); diff != "" {
		t.Errorf("resumed events (-want +got):\n%s", diff)
	}
	if first, ok := f.events.events[0].(turn.TurnStartedEvent); !ok || !first.Resumed {
		t.Errorf("first resumed event = %#v, want TurnStartedEvent{Resumed: true}", f.events.events[0])
	}
	// The tool's result is stored (journal and conversation) before the
	// next model request.
	var order []string
	for _, e := range f.journal(res.RunID) {
		order = append(order, string(e.Status)+" "+e.Key)
	}
	idx := func(s string) int {
		for i, o := range order {
			if o == s {
				return i
			}
		}
		t.Fatalf("journal lacks %q: %v", s, order)
		return -1
	}
	if !(idx("completed agent-loop/1/dispatch-tools/call_1") < idx("completed agent-loop/1/dispatch-tools/call_1/message") &&
		idx("completed agent-loop/1/dispatch-tools/call_1/message") < idx("started agent-loop/2/model-call")) {
		t.Errorf("tool result not stored before the next model call: %v", order)
	}
}

func TestDeniedCallIsToldToTheModel(t *testing.T) {
	f := newFixture(t, []scripted.Response{
		emailThenAnswer()[0],
		scripted.Say("The reviewer did not let me send it."),
	}, nil)
	res := f.park(t, f.bindings(), "Send the draft.")
	f.decide(res.Approvals, false)
	final, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, f.bindings())
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if f.log.total() != 0 {
		t.Errorf("a denied call ran")
	}
	reqs := f.provider.Requests()
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != bindings.ChatTool || !strings.Contains(last.Content, "reviewer denied") {
		t.Errorf("model was told %+v", last)
	}
	if final.Status != turn.StatusCompleted {
		t.Errorf("final = %+v", final)
	}
}

// TestParallelApprovalsNeverCross: two gated calls in one response park
// together, each with its own approval; approving one and denying the
// other runs exactly the approved call with its own arguments. The
// ungated call of the same response is held until both are decided.
func TestParallelApprovalsNeverCross(t *testing.T) {
	var mu sync.Mutex
	var sentTo []string
	f := newFixture(t, []scripted.Response{
		{ToolCalls: []bindings.ToolCall{
			scripted.ToolCall("a", "acme.send-email", map[string]any{"to": "alice@globex.test", "subject": "s", "body": "b"}),
			scripted.ToolCall("b", "acme.send-email", map[string]any{"to": "bob@globex.test", "subject": "s", "body": "b"}),
			scripted.ToolCall("c", "acme.clause-search", map[string]any{"query": "nda"}),
		}},
		scripted.Say("Sent one email."),
	}, nil)
	f.addTool("acme.send-email", "2.1.4", emailSchema, func(_ context.Context, in json.RawMessage, _ bindings.CallContext) (json.RawMessage, error) {
		var args struct{ To string }
		_ = json.Unmarshal(in, &args)
		mu.Lock()
		sentTo = append(sentTo, args.To)
		mu.Unlock()
		return json.RawMessage(`{"sent":true}`), nil
	})
	res, err := turn.Invoke(t.Context(), f.input("Email both."), f.bindings())
	if err != nil || res.Status != turn.StatusSuspended || len(res.Approvals) != 2 {
		t.Fatalf("Invoke = %+v, %v; want two approvals", res, err)
	}
	if res.Approvals[0].ID == res.Approvals[1].ID || res.Approvals[0].ToolCallID != "a" || res.Approvals[1].ToolCallID != "b" {
		t.Fatalf("approvals = %+v", res.Approvals)
	}
	if f.log.total() != 0 {
		t.Fatalf("calls ran before the approvals: %v", f.log.calls)
	}
	f.decide(res.Approvals[:1], true)
	// Still pending: nothing runs.
	if _, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, f.bindings()); agents.CodeOf(err) != agents.CodeHitlRequired {
		t.Fatalf("Resume with one approval pending = %v, want hitl-required", err)
	}
	if f.log.total() != 0 {
		t.Fatalf("calls ran while an approval was pending: %v", f.log.calls)
	}
	f.decide(res.Approvals[1:], false)
	if _, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, f.bindings()); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if diff := cmp.Diff([]string{"alice@globex.test"}, sentTo); diff != "" {
		t.Errorf("emails sent (-want +got):\n%s", diff)
	}
	if f.log.count("acme.clause-search") != 1 {
		t.Errorf("the ungated call ran %d times, want 1", f.log.count("acme.clause-search"))
	}
}

func TestExpiredApprovalFollowsOnTimeout(t *testing.T) {
	for _, tc := range []struct {
		onTimeout string
		check     func(t *testing.T, f *fixture, res turn.Result, err error)
	}{
		{turn.OnTimeoutDeny, func(t *testing.T, f *fixture, res turn.Result, err error) {
			if err != nil || res.Status != turn.StatusCompleted || f.log.total() != 0 {
				t.Errorf("deny: %+v, %v, tool calls %d", res, err, f.log.total())
			}
		}},
		{turn.OnTimeoutFail, func(t *testing.T, f *fixture, res turn.Result, err error) {
			if agents.CodeOf(err) != agents.CodeHitlRequired || f.log.total() != 0 {
				t.Errorf("fail: %+v, %v", res, err)
			}
		}},
		{turn.OnTimeoutEscalate, func(t *testing.T, f *fixture, res turn.Result, err error) {
			if err != nil || res.Status != turn.StatusSuspended || len(res.Approvals) != 1 || res.Approvals[0].ReviewerRole != turn.RoleSenior {
				t.Fatalf("escalate: %+v, %v", res, err)
			}
			f.decide(res.Approvals, true)
			final, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, f.bindings())
			if err != nil || final.Status != turn.StatusCompleted || f.log.count("acme.send-email") != 1 {
				t.Errorf("after escalation: %+v, %v, sends %d", final, err, f.log.count("acme.send-email"))
			}
		}},
	} {
		t.Run(tc.onTimeout, func(t *testing.T) {
			f := newFixture(t, emailThenAnswer(), nil)
			b := f.bindings()
			b.TenantPolicy = &bindings.TenantPolicy{Hitl: &bindings.HitlSpec{OnTimeout: tc.onTimeout}}
			res := f.park(t, b, "Send the draft.")
			f.clock.Advance(25 * time.Hour)
			res, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, b)
			tc.check(t, f, res, err)
		})
	}
}

// TestAskOnFirstUse: the first use of the tool in the conversation asks;
// a later turn of the same conversation does not.
func TestAskOnFirstUse(t *testing.T) {
	f := newFixture(t, append(searchThenAnswer(), searchThenAnswer()...), func(s *agent.Spec) {
		s.ConversationPolicy.Hitl.Tools.Overrides = map[string]agent.ToolGate{"acme.clause-search": {Mode: agent.GateAskOnFirstUse}}
	})
	res := f.park(t, f.bindings(), "Find a clause.")
	f.decide(res.Approvals, true)
	if _, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, f.bindings()); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	res2, err := turn.Invoke(t.Context(), f.input("Find another."), f.bindings())
	if err != nil || res2.Status != turn.StatusCompleted || res2.TurnNumber != 2 {
		t.Fatalf("second turn = %+v, %v; want completed without asking", res2, err)
	}
	if f.log.count("acme.clause-search") != 2 {
		t.Errorf("clause-search ran %d times, want 2", f.log.count("acme.clause-search"))
	}
}

func TestSessionGate(t *testing.T) {
	f := newFixture(t, []scripted.Response{scripted.Say("one"), scripted.Say("two")}, func(s *agent.Spec) {
		one := 1
		s.ConversationPolicy.HitlAfterTurns = &one
	})
	if res, err := turn.Invoke(t.Context(), f.input("First."), f.bindings()); err != nil || res.Status != turn.StatusCompleted {
		t.Fatalf("turn 1 = %+v, %v", res, err)
	}
	res, err := turn.Invoke(t.Context(), f.input("Second."), f.bindings())
	if err != nil || res.Status != turn.StatusSuspended || res.Approvals[0].ToolID != "" {
		t.Fatalf("turn 2 = %+v, %v; want a session-gate park", res, err)
	}
	if f.provider.Calls() != 1 || len(f.messages()) != 2 {
		t.Errorf("the gated turn ran before approval: model calls %d, messages %d", f.provider.Calls(), len(f.messages()))
	}
	f.decide(res.Approvals, true)
	final, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, f.bindings())
	if err != nil || final.Response.Content != "two" {
		t.Fatalf("Resume = %+v, %v", final, err)
	}
}

// TestConcurrentResume: 16 goroutines resume the same parked run; exactly
// one drives it and the approved tool runs once.
func TestConcurrentResume(t *testing.T) {
	f := newFixture(t, emailThenAnswer(), nil)
	res := f.park(t, f.bindings(), "Send the draft.")
	f.decide(res.Approvals, true)
	f.events.reset()
	const n = 16
	var wg sync.WaitGroup
	start := make(chan struct{})
	results := make([]turn.Result, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, f.bindings())
		}()
	}
	close(start)
	wg.Wait()
	completed, busy := 0, 0
	for i := range n {
		switch {
		case errs[i] == nil && results[i].Status == turn.StatusCompleted:
			completed++
		case agents.CodeOf(errs[i]) == agents.CodeRunBusy:
			busy++
		default:
			t.Errorf("resume %d = %+v, %v", i, results[i], errs[i])
		}
	}
	if completed+busy != n || completed == 0 {
		t.Errorf("completed %d, busy %d", completed, busy)
	}
	// A drive that read the run without its lease (memstore's Driver
	// takes it with the first write) may start, then stop run-busy at
	// that write, having called nothing: exactly one drive goes on.
	drives := 0
	for _, e := range f.events.events {
		switch e := e.(type) {
		case turn.TurnStartedEvent:
			drives++
		case turn.TurnFailedEvent:
			if e.Code == agents.CodeRunBusy {
				drives--
			}
		}
	}
	if drives != 1 {
		t.Errorf("%d drivers went on, want exactly 1", drives)
	}
	if c := f.log.count("acme.send-email"); c != 1 {
		t.Errorf("the approved tool ran %d times, want 1", c)
	}
	if f.provider.Calls() != 2 {
		t.Errorf("model called %d times, want 2", f.provider.Calls())
	}
}

func TestResolveEffectiveHitlPolicy(t *testing.T) {
	ms := func(v int64) *int64 { return &v }
	n := func(v int) *int { return &v }
	gates := func(def agent.GateMode, over map[string]agent.ToolGate) *agent.ConversationPolicy {
		g := &agent.ToolGates{Overrides: over}
		if def != "" {
			g.Default = &agent.ToolGate{Mode: def}
		}
		return &agent.ConversationPolicy{Hitl: &agent.HitlPolicy{Tools: g, TimeoutMs: ms(3_600_000), DefaultReviewerRole: turn.RoleSenior}}
	}
	tests := []struct {
		name   string
		agent  *agent.ConversationPolicy
		tenant *bindings.HitlSpec
		// tool → wanted gate
		gates map[string]agent.ToolGate
		want  turn.EffectiveHitlPolicy
	}{
		{
			name: "defaults", gates: map[string]agent.ToolGate{"t": {Mode: agent.GateNeverAsk}},
			want: turn.EffectiveHitlPolicy{TimeoutMs: 86_400_000, ReviewerRole: turn.RoleStandard, OnTimeout: turn.OnTimeoutEscalate},
		},
		{
			name: "agent over defaults", agent: gates(agent.GateAskOnFirstUse, nil),
			gates: map[string]agent.ToolGate{"t": {Mode: agent.GateAskOnFirstUse}},
			want:  turn.EffectiveHitlPolicy{TimeoutMs: 3_600_000, ReviewerRole: turn.RoleSenior, OnTimeout: turn.OnTimeoutEscalate},
		},
		{
			name:  "tenant tightens every field",
			agent: gates(agent.GateNeverAsk, map[string]agent.ToolGate{"mail": {Mode: agent.GateAskOnFirstUse}}),
			tenant: &bindings.HitlSpec{MaxTimeoutMs: ms(60_000), MinReviewerRole: turn.RoleAdmin, OnTimeout: turn.OnTimeoutFail, AfterTurns: n(3),
				ToolFloors: map[string]agent.ToolGate{"mail": {Mode: agent.GateAlwaysAsk, RequiredRole: turn.RoleAdmin}}},
			gates: map[string]agent.ToolGate{"mail": {Mode: agent.GateAlwaysAsk, RequiredRole: turn.RoleAdmin}, "t": {Mode: agent.GateNeverAsk}},
			want:  turn.EffectiveHitlPolicy{TimeoutMs: 60_000, ReviewerRole: turn.RoleAdmin, OnTimeout: turn.OnTimeoutFail, AfterTurns: n(3)},
		},
		{
			name:  "tenant cannot loosen",
			agent: gates(agent.GateAlwaysAsk, nil),
			tenant: &bindings.HitlSpec{MaxTimeoutMs: ms(7 * 86_400_000), MinReviewerRole: turn.RoleStandard, OnTimeout: turn.OnTimeoutEscalate, AfterTurns: n(0),
				ToolFloors: map[string]agent.ToolGate{"t": {Mode: agent.GateNeverAsk}, "*": {Mode: agent.GateNeverAsk}}},
			gates: map[string]agent.ToolGate{"t": {Mode: agent.GateAlwaysAsk}, "u": {Mode: agent.GateAlwaysAsk}},
			want:  turn.EffectiveHitlPolicy{TimeoutMs: 3_600_000, ReviewerRole: turn.RoleSenior, OnTimeout: turn.OnTimeoutEscalate},
		},
		{
			name:   "floors apply without agent tool gates",
			tenant: &bindings.HitlSpec{ToolFloors: map[string]agent.ToolGate{"*": {Mode: agent.GateAskOnFirstUse}}},
			gates:  map[string]agent.ToolGate{"any": {Mode: agent.GateAskOnFirstUse}},
			want:   turn.EffectiveHitlPolicy{TimeoutMs: 86_400_000, ReviewerRole: turn.RoleStandard, OnTimeout: turn.OnTimeoutEscalate},
		},
		{
			name:   "earlier session gate wins",
			agent:  &agent.ConversationPolicy{HitlAfterTurns: n(10), Hitl: &agent.HitlPolicy{AfterTurns: n(5)}},
			tenant: &bindings.HitlSpec{AfterTurns: n(8)},
			want:   turn.EffectiveHitlPolicy{TimeoutMs: 86_400_000, ReviewerRole: turn.RoleStandard, OnTimeout: turn.OnTimeoutEscalate, AfterTurns: n(5)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := agent.Agent{ID: "a", Version: "1.0.0", ConversationPolicy: tt.agent}
			got := turn.ResolveEffectiveHitlPolicy(tt.tenant, a)
			for tool, want := range tt.gates {
				if g := got.Gate(tool); g != want {
					t.Errorf("Gate(%s) = %+v, want %+v", tool, g, want)
				}
			}
			got.ToolGates, got.ToolFloors = nil, nil
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("policy (-want +got):\n%s", diff)
			}
			// The tenant never loosens: every field is at least as strict
			// as with no tenant at all.
			base := turn.ResolveEffectiveHitlPolicy(nil, a)
			if got.TimeoutMs > base.TimeoutMs {
				t.Errorf("timeout loosened: %d > %d", got.TimeoutMs, base.TimeoutMs)
			}
			for _, tool := range []string{"t", "u", "mail", "any"} {
				if turn.ResolveEffectiveHitlPolicy(tt.tenant, a).Gate(tool).Mode.Strictness() < base.Gate(tool).Mode.Strictness() {
					t.Errorf("gate of %s loosened", tool)
				}
			}
		})
	}
}

func TestEvaluateSessionGate(t *testing.T) {
	two := 2
	p := turn.EffectiveHitlPolicy{AfterTurns: &two}
	for turnNo, want := range map[int]bool{1: false, 2: false, 3: true, 9: true} {
		if got := turn.EvaluateSessionGate(p, turnNo).Required; got != want {
			t.Errorf("turn %d: required = %v, want %v", turnNo, got, want)
		}
	}
	if turn.EvaluateSessionGate(turn.EffectiveHitlPolicy{}, 100).Required {
		t.Error("no gate: required")
	}
}

// TestEscalationEnds: an approval that keeps expiring is escalated up the
// ladder a bounded number of times, then fails the turn with hitl-required.
func TestEscalationEnds(t *testing.T) {
	f := newFixture(t, emailThenAnswer(), nil)
	res := f.park(t, f.bindings(), "Send.")
	var err error
	var roles []string
	for range 20 {
		f.clock.Advance(25 * time.Hour)
		res, err = turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, f.bindings())
		if err != nil {
			break
		}
		roles = append(roles, res.Approvals[0].ReviewerRole)
	}
	if agents.CodeOf(err) != agents.CodeHitlRequired {
		t.Fatalf("after escalations: %v, want hitl-required", err)
	}
	if len(roles) != 7 || roles[0] != turn.RoleSenior || roles[6] != turn.RoleAdmin {
		t.Errorf("escalated roles = %v", roles)
	}
	if f.log.total() != 0 {
		t.Error("an unapproved call ran")
	}
}

// TestSessionGateAsksAtEveryTurnPastN pins the decision documented on
// EvaluateSessionGate: past hitlAfterTurns every turn asks, also after an
// earlier turn's gate was approved, each with an approval of its own run.
func TestSessionGateAsksAtEveryTurnPastN(t *testing.T) {
	f := newFixture(t, []scripted.Response{scripted.Say("one"), scripted.Say("two"), scripted.Say("three")}, func(s *agent.Spec) {
		one := 1
		s.ConversationPolicy.HitlAfterTurns = &one
	})
	if _, err := turn.Invoke(t.Context(), f.input("First."), f.bindings()); err != nil {
		t.Fatal(err)
	}
	var asked []string
	for i, msg := range []string{"Second.", "Third."} {
		res, err := turn.Invoke(t.Context(), f.input(msg), f.bindings())
		if err != nil || res.Status != turn.StatusSuspended || len(res.Approvals) != 1 || res.Approvals[0].ToolID != "" {
			t.Fatalf("turn %d = %+v, %v; want a session-gate park", i+2, res, err)
		}
		if res.Approvals[0].RunID != res.RunID {
			t.Errorf("turn %d's gate approval names run %q, want its own %q", i+2, res.Approvals[0].RunID, res.RunID)
		}
		asked = append(asked, res.Approvals[0].ID)
		f.decide(res.Approvals, true)
		if final, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, f.bindings()); err != nil || final.Status != turn.StatusCompleted {
			t.Fatalf("turn %d after approval = %+v, %v", i+2, final, err)
		}
	}
	if asked[0] == asked[1] {
		t.Errorf("turns 2 and 3 shared the approval %q", asked[0])
	}
	if f.provider.Calls() != 3 {
		t.Errorf("model calls %d, want 3", f.provider.Calls())
	}
}
