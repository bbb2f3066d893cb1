package pgstore

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// TestHandoffParksAndResumesAsTarget: on PostgreSQL, a triage agent hands
// the turn to a billing agent whose refund tool always asks; the turn
// parks on the billing agent's approval, and a Resume from fresh bindings
// (another process) continues as the billing agent: the refund runs once,
// the answer is the billing agent's, recorded on the final message and in
// the Result.
func TestHandoffParksAndResumesAsTarget(t *testing.T) {
	s := New(testPool(t), nil)
	h := newHandoffFixture(t, s)
	res := h.park(t)
	done, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: turnTenant, RunID: res.RunID}, h.bind(s))
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	h.checkDone(t, s, done)
}

// TestHandoffParksAndAWorkerFinishesAsTarget: as
// TestHandoffParksAndResumesAsTarget, but once the refund is approved a
// worker over another Store on the same database (another process), with
// no Resume call, finishes the turn as the billing agent.
func TestHandoffParksAndAWorkerFinishesAsTarget(t *testing.T) {
	pool := workerTestPool(t)
	s := New(pool, nil)
	h := newHandoffFixture(t, s)
	res := h.park(t)
	w := turn.NewWorker(h.bind(New(pool, nil)), turn.WorkerOptions{TenantIDs: []string{turnTenant}, PollInterval: 20 * time.Millisecond, SweepInterval: -1})
	ctx, stop := context.WithCancel(t.Context())
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(ctx) }()
	defer func() {
		stop()
		if err := <-stopped; err != nil {
			t.Errorf("worker: %v", err)
		}
	}()
	waitCtx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	done, err := turn.Wait(waitCtx, h.bind(s), turnTenant, res.RunID)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	h.checkDone(t, s, done)
}

// handoffFixture: a triage agent that hands billing questions to a
// billing agent whose refund tool always asks, with a model scripted for
// one turn of it.
type handoffFixture struct {
	f        *turnFixture
	triage   agent.Agent
	provider *scripted.Provider
	reg      *registry.Agents
	refunds  atomic.Int64
	conv     string
}

func newHandoffFixture(t *testing.T, s *Store) *handoffFixture {
	t.Helper()
	f := newTurnFixture(t, s)
	h := &handoffFixture{f: f}
	if err := f.tools.Add(turnTenant, bindings.ToolDescriptor{
		ID: "acme.refund", Version: "1.0.0", Description: "Refund an invoice.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"invoice":{"type":"string"}},"required":["invoice"]}`),
	}, func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
		h.refunds.Add(1)
		return json.RawMessage(`{"refunded":true}`), nil
	}); err != nil {
		t.Fatal(err)
	}
	toolUse := []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}}
	billing, err := agent.Define(agent.Spec{
		ID: "acme.billing", Version: "1.0.0", Name: "Billing", Instructions: "You are the billing desk.", Capabilities: toolUse,
		Tools: []agent.ToolRef{{ID: "acme.refund", Version: "^1.0.0"}},
		ConversationPolicy: &agent.ConversationPolicy{Hitl: &agent.HitlPolicy{Tools: &agent.ToolGates{Overrides: map[string]agent.ToolGate{
			"acme.refund": {Mode: agent.GateAlwaysAsk},
		}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	triage, err := agent.Define(agent.Spec{
		ID: "acme.triage", Version: "1.0.0", Name: "Triage", Instructions: "You route questions.", Capabilities: toolUse,
		Tools:    []agent.ToolRef{{ID: "acme.lookup", Version: "^1.0.0"}},
		Handoffs: []agent.AgentRef{{ID: "acme.billing", Version: "^1.0.0", Name: "to_billing"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.NewAgents(triage, billing)
	if err != nil {
		t.Fatal(err)
	}
	script := []scripted.Response{
		scripted.Call("h_1", "to_billing", map[string]any{"message": "refund"}),
		scripted.Call("r_1", "acme.refund", map[string]any{"invoice": "42"}),
		scripted.Say("Refunded invoice 42."),
	}
	h.triage, h.reg, h.provider = triage, reg, scripted.New(script, nil)
	h.conv = f.open(t, triage)
	return h
}

// bind is the bindings of a turn over s.
func (h *handoffFixture) bind(s *Store) turn.Bindings {
	return h.f.over(s, h.provider, h.reg)
}

// park runs the triage turn, which hands over and parks on the billing
// agent's refund, and approves the refund.
func (h *handoffFixture) park(t *testing.T) turn.Result {
	t.Helper()
	s := h.f.store
	res, err := h.f.invoke(t.Context(), h.bind(s), h.triage, h.conv)
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if res.Status != turn.StatusSuspended || len(res.Approvals) != 1 || res.Approvals[0].ToolID != "acme.refund" || res.Approvals[0].RunID != res.RunID {
		t.Fatalf("result %s, approvals %+v; want suspended on the refund", res.Status, res.Approvals)
	}
	if n := h.refunds.Load(); n != 0 {
		t.Fatalf("the refund ran %d times before the decision", n)
	}
	if _, err := s.ResolveApproval(t.Context(), turnTenant, res.Approvals[0].ID, bindings.ApprovalDecision{Approved: true, Reviewer: "rita"}); err != nil {
		t.Fatalf("ResolveApproval: %v", err)
	}
	return res
}

// checkDone checks the finished turn: the billing agent answered, on the
// final message and in the Result, its model call made as the billing
// agent, and the refund ran once.
func (h *handoffFixture) checkDone(t *testing.T, s *Store, done turn.Result) {
	t.Helper()
	refunds, provider, conv := &h.refunds, h.provider, h.conv
	if done.Status != turn.StatusCompleted || done.Response.Content != "Refunded invoice 42." || done.AgentID != "acme.billing" || done.AgentVersion != "1.0.0" {
		t.Fatalf("result %s %q by %s@%s, want the billing desk's answer", done.Status, done.Response.Content, done.AgentID, done.AgentVersion)
	}
	if n := refunds.Load(); n != 1 {
		t.Errorf("the refund ran %d times, want once", n)
	}
	reqs := provider.Requests()
	if len(reqs) != 3 || !strings.HasPrefix(reqs[2].Messages[0].Content, "You are the billing desk.") {
		t.Errorf("the resumed model call was not made as the billing desk (%d calls)", len(reqs))
	}
	msgs, err := s.ReadMessages(t.Context(), bindings.ReadMessagesInput{TenantID: turnTenant, ConversationID: conv, Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	var meta turn.AnswererMeta
	last := msgs[len(msgs)-1]
	if last.ID != done.Response.MessageID || json.Unmarshal(last.Metadata, &meta) != nil || meta.AgentID != "acme.billing" {
		t.Errorf("final message %s metadata %s, want the billing desk", last.ID, last.Metadata)
	}
}
