package eval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/eval"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// TestApprovalsAreGrantedAndResumed: a gated tool parks the recorded turn
// and the evaluated one; eval approves in its own store, resumes, and
// answers the call from the recording.
func TestApprovalsAreGrantedAndResumed(t *testing.T) {
	ctx := t.Context()
	h := newHost(t)
	gated := func(version string) agent.Agent {
		a, err := agent.Define(agent.Spec{
			ID: "acme.refunds", Version: version, Name: "Refunds", Instructions: "Refunds.",
			Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
			Tools:        []agent.ToolRef{{ID: "acme.lookup-order", Version: "^1.0.0"}},
			ConversationPolicy: &agent.ConversationPolicy{Hitl: &agent.HitlPolicy{
				Tools: &agent.ToolGates{Overrides: map[string]agent.ToolGate{"acme.lookup-order": {Mode: agent.GateAlwaysAsk}}},
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := gated("1.0.0")
	conv, err := h.store.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, AgentID: a.ID, AgentVersion: a.Version})
	if err != nil {
		t.Fatal(err)
	}
	b := h.bindings(scripted.New([]scripted.Response{scripted.Call("c1", "acme.lookup-order", map[string]int{"order": 9}), scripted.Say("Order 9: refund sent.")}, nil))
	res, err := turn.Invoke(ctx, turn.Input{TenantID: tenant, Agent: a, ConversationID: conv.ID, UserMessage: "Refund 9"}, b)
	if err != nil || res.Status != turn.StatusSuspended {
		t.Fatalf("record: %+v, %v", res, err)
	}
	if _, err := h.store.ResolveApproval(ctx, tenant, res.Approvals[0].ID, bindings.ApprovalDecision{Approved: true, Reviewer: "rita"}); err != nil {
		t.Fatal(err)
	}
	if res, err = turn.Resume(ctx, turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: a}, b); err != nil || res.Status != turn.StatusCompleted {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	ds, err := eval.DatasetFromRuns(ctx, b, tenant, []string{res.RunID})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ds.Cases[0].Baseline.ToolCalls); n != 1 {
		t.Fatalf("the approved call is not in the baseline: %d calls", n)
	}
	calls := h.calls.Load()
	rep, err := eval.Run(ctx, ds, eval.Options{Agent: gated("1.1.0"),
		Bindings: h.bindings(scripted.New([]scripted.Response{scripted.Call("x", "acme.lookup-order", map[string]int{"order": 9}), scripted.Say("Refund for order 9 sent.")}, nil)),
		Graders:  []eval.Grader{eval.Contains("9")}})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Cases[0]; !c.Pass || c.Answer != "Refund for order 9 sent." || len(c.ToolCalls) != 1 {
		t.Errorf("case = %+v", c)
	}
	if h.calls.Load() != calls {
		t.Error("the handler ran during the evaluation")
	}
}

// TestStructuredOutput: a run's validated output is its baseline's
// Output, and the new answer's output is what OutputSchema grades.
func TestStructuredOutput(t *testing.T) {
	ctx := t.Context()
	h := newHost(t)
	schema := json.RawMessage(`{"type":"object","properties":{"refund":{"type":"boolean"}},"required":["refund"]}`)
	def := func(version string) agent.Agent {
		a, err := agent.Define(agent.Spec{ID: "acme.refunds", Version: version, Name: "Refunds", Instructions: "Decide.",
			Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "json-mode"}}}}, Output: schema})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := def("1.0.0")
	run := h.record(t, a, "Refund?", scripted.Say(`{"refund": true}`))
	ds, err := eval.DatasetFromRuns(ctx, h.bindings(nil), tenant, []string{run})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(ds.Cases[0].Baseline.Output); got != `{"refund":true}` {
		t.Errorf("baseline output = %s", got)
	}
	strict := eval.OutputSchema(json.RawMessage(`{"type":"object","properties":{"refund":{"const":true}}}`))
	rep, err := eval.Run(ctx, ds, eval.Options{Agent: def("1.1.0"), Bindings: h.bindings(scripted.New([]scripted.Response{scripted.Say(`{"refund": false}`)}, nil)),
		Graders: []eval.Grader{strict}})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Cases[0]
	if c.Pass || !c.Regressed || string(c.Output) != `{"refund":false}` || !strings.Contains(c.Reason, "/refund") {
		t.Errorf("case = %+v", c)
	}
}

// echoProvider answers by the request, not by the order of calls: the
// user message, upper-cased. Cases then run concurrently.
type echoProvider struct{}

func (echoProvider) ID() string { return "echo" }
func (echoProvider) Models() []bindings.ModelInfo {
	return []bindings.ModelInfo{{ID: "echo-1", Features: []string{"tool-use"}, ContextWindow: 1000}}
}
func (echoProvider) Generate(_ context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	last := req.Messages[len(req.Messages)-1].Content
	return bindings.GenerateResponse{Text: strings.ToUpper(last), FinishReason: "stop", Model: req.Model,
		Usage: bindings.Usage{InputTokens: len(last), CostUsd: 0.0001}}, nil
}

// TestConcurrentCasesKeepDatasetOrder: with a provider that answers by
// the request, cases run Concurrency at a time and the report keeps the
// dataset's order.
func TestConcurrentCasesKeepDatasetOrder(t *testing.T) {
	h := newHost(t)
	var ds eval.Dataset
	for i := range 24 {
		ds.Cases = append(ds.Cases, eval.Case{ID: fmt.Sprint("c", i), TenantID: tenant, UserMessage: fmt.Sprint("message ", i),
			Parameters: map[string]any{"firmName": "Acme"}, Expect: &eval.Expect{Contains: []string{fmt.Sprint("MESSAGE ", i)}}})
	}
	b := h.bindings(echoProvider{})
	first, err := eval.Run(t.Context(), ds, eval.Options{Agent: defineAgent(t, "1.1.0", "New."), Bindings: b, Concurrency: 6})
	if err != nil {
		t.Fatal(err)
	}
	if first.Passed != 24 {
		t.Fatalf("passed %d of 24: %+v", first.Passed, first.Cases[0])
	}
	for i, c := range first.Cases {
		if c.ID != ds.Cases[i].ID || c.Answer != fmt.Sprint("MESSAGE ", i) {
			t.Errorf("case %d = %s %q", i, c.ID, c.Answer)
		}
	}
	second, err := eval.Run(t.Context(), ds, eval.Options{Agent: defineAgent(t, "1.1.0", "New."), Bindings: b, Concurrency: 6})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(first)
	c, _ := json.Marshal(second)
	if string(a) != string(c) {
		t.Error("two concurrent runs gave different reports")
	}
}

// TestHistoryOfLaterTurns: a case from a conversation's second turn
// carries the first turn's messages, and the evaluated turn runs as turn 2
// with them in its prompt.
func TestHistoryOfLaterTurns(t *testing.T) {
	ctx := t.Context()
	h := newHost(t)
	a := defineAgent(t, "1.0.0", "Refunds.")
	conv, err := h.store.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, AgentID: a.ID, AgentVersion: a.Version})
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, q := range [][2]string{{"I bought a kettle.", "Noted: a kettle."}, {"Refund it.", "Refund for the kettle sent."}} {
		res, err := turn.Invoke(ctx, turn.Input{TenantID: tenant, Agent: a, ConversationID: conv.ID, UserMessage: q[0],
			Parameters: map[string]any{"firmName": "Acme"}}, h.bindings(scripted.New([]scripted.Response{scripted.Say(q[1])}, nil)))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, res.RunID)
	}
	ds, err := eval.DatasetFromRuns(ctx, h.bindings(nil), tenant, runs)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Cases[0].History) != 0 {
		t.Errorf("turn 1 has history %+v", ds.Cases[0].History)
	}
	want := []eval.HistoryMessage{{Role: bindings.RoleUser, Content: "I bought a kettle.", TurnNumber: 1}, {Role: bindings.RoleAgent, Content: "Noted: a kettle.", TurnNumber: 1}}
	if diff := cmp.Diff(want, ds.Cases[1].History); diff != "" {
		t.Fatalf("history (-want +got):\n%s", diff)
	}
	p := scripted.New([]scripted.Response{scripted.Say("Noted."), scripted.Say("Refund for the kettle sent.")}, nil)
	rep, err := eval.Run(ctx, ds, eval.Options{Agent: defineAgent(t, "1.1.0", "Refunds."), Bindings: h.bindings(p)})
	if err != nil || rep.Failed != 0 {
		t.Fatalf("%+v, %v", rep, err)
	}
	var prompt []string
	for _, m := range p.Requests()[1].Messages {
		prompt = append(prompt, string(m.Role)+": "+m.Content)
	}
	if diff := cmp.Diff([]string{"system: Refunds. You work for Acme.", "user: I bought a kettle.", "assistant: Noted: a kettle.", "user: Refund it."}, prompt); diff != "" {
		t.Errorf("the second case's prompt (-want +got):\n%s", diff)
	}
}
