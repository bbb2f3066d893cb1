package eval_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/eval"
	"github.com/kindgi/agents/providers/scripted"
)

// newScript is A@1.1.0's answers to the three recorded cases: the same
// tool calls (arguments in another key order and spacing), and a second
// answer that no longer says "refund".
func newScript() *scripted.Provider {
	return scripted.New([]scripted.Response{
		scripted.Call("x1", "acme.lookup-order", json.RawMessage(`{ "order": 1 }`)).WithUsage(11, 6, 0.0015),
		scripted.Say("Refund issued for order 1. Anything else?").WithUsage(21, 9, 0.0025),
		scripted.Call("x1", "acme.lookup-order", json.RawMessage(`{"verbose": true, "order": 2}`)),
		scripted.Say("Order 2 was delivered."),
		scripted.Call("x1", "acme.lookup-order", json.RawMessage(`{"order":404}`)),
		scripted.Say("Order 404 does not exist, so no refund."),
	}, nil)
}

func storeState(t *testing.T, h host) string {
	t.Helper()
	page, err := h.store.ListRuns(t.Context(), bindings.ListRunsInput{TenantID: tenant})
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for _, r := range page.Runs {
		j, err := h.store.ReadJournal(t.Context(), tenant, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(j)
		sb.Write(b)
	}
	return sb.String()
}

// TestReplayRecordedRuns is the first acceptance point: three
// recorded runs of A@1.0.0 become a dataset that A@1.1.0 is evaluated on
// with a scripted provider; the tools are answered from the journals, the
// failing case is listed with its run id and the grader's reason, the
// host's store is left as it was, and two runs give byte-equal reports.
func TestReplayRecordedRuns(t *testing.T) {
	ctx := t.Context()
	h := newHost(t)
	runs := recordThree(t, h)
	recordedCalls := h.calls.Load()
	if recordedCalls != 3 {
		t.Fatalf("recording called the tool %d times, want 3", recordedCalls)
	}
	ds, err := eval.DatasetFromRuns(ctx, h.bindings(scripted.New(nil, nil)), tenant, runs)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Cases) != 3 {
		t.Fatalf("got %d cases, want 3", len(ds.Cases))
	}
	c := ds.Cases[0]
	if c.ID != runs[0] || c.FromRunID != runs[0] || c.UserMessage != "Refund order 1, please." || c.Parameters["firmName"] != "Acme" {
		t.Errorf("case 0 = %+v", c)
	}
	wantBase := &eval.Baseline{
		AgentID: "acme.refunds", AgentVersion: "1.0.0", Status: "completed", Answer: "Refund issued for order 1.",
		ToolCalls: []eval.RecordedCall{{ToolID: "acme.lookup-order", ToolVersion: "1.2.0", Arguments: json.RawMessage(`{"order":1}`),
			Output: json.RawMessage(`{"order":1,"status":"delivered","total":12.5}`)}},
	}
	wantBase.Usage.InputTokens, wantBase.Usage.OutputTokens, wantBase.Usage.CostUsd = 30, 13, 0.003
	wantBase.Usage.ModelCalls, wantBase.Usage.ToolCalls = 2, 1
	if diff := cmp.Diff(wantBase, c.Baseline); diff != "" {
		t.Errorf("baseline (-want +got):\n%s", diff)
	}
	if got := ds.Cases[2].Baseline.ToolCalls[0]; got.Error != "no such order" || got.Output != nil {
		t.Errorf("the recorded tool error = %+v", got)
	}

	before := storeState(t, h)
	a11 := defineAgent(t, "1.1.0", "You handle refunds politely.")
	evaluate := func() (eval.Report, []byte) {
		var progress []int
		rep, err := eval.Run(ctx, ds, eval.Options{
			Agent: a11, Bindings: h.bindings(newScript()),
			Graders: []eval.Grader{eval.Contains("refund"), eval.Matches(`(?i)order \d+`)},
			OnCase:  func(done, total int, _ eval.CaseResult) { progress = append(progress, done, total) },
		})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]int{1, 3, 2, 3, 3, 3}, progress); diff != "" {
			t.Errorf("OnCase progress (-want +got):\n%s", diff)
		}
		var out bytes.Buffer
		if err := json.NewEncoder(&out).Encode(rep); err != nil {
			t.Fatal(err)
		}
		if err := rep.WriteJUnit(&out); err != nil {
			t.Fatal(err)
		}
		if err := rep.WriteHTML(&out); err != nil {
			t.Fatal(err)
		}
		return rep, out.Bytes()
	}
	rep, first := evaluate()
	if n := h.calls.Load() - recordedCalls; n != 0 {
		t.Errorf("the tool handler ran %d times under replay, want 0", n)
	}
	if len(rep.Cases) != 3 || rep.Passed != 1 || rep.Failed != 2 || rep.Regressed != 1 {
		t.Fatalf("report: %d cases, %d passed, %d failed, %d regressed; want 3, 1, 2, 1\n%+v", len(rep.Cases), rep.Passed, rep.Failed, rep.Regressed, rep)
	}
	// Case 1: "Refund" is capitalised: it fails contains "refund" on the
	// baseline too, so it fails without regressing.
	if c := rep.Cases[0]; c.Pass || c.Regressed || c.BaselinePass {
		t.Errorf("case 0: pass %v regressed %v baseline pass %v", c.Pass, c.Regressed, c.BaselinePass)
	}
	reg := rep.Cases[1]
	if reg.FromRunID != runs[1] || !reg.Regressed || reg.Pass || !reg.BaselinePass {
		t.Errorf("case 1 = %+v", reg)
	}
	if want := `contains "refund": the answer does not contain "refund"`; reg.Reason != want {
		t.Errorf("case 1 reason = %q, want %q", reg.Reason, want)
	}
	if reg.Answer != "Order 2 was delivered." || reg.Baseline.Answer != "Order 2 was delivered; a refund is possible." {
		t.Errorf("case 1 answers: new %q, baseline %q", reg.Answer, reg.Baseline.Answer)
	}
	if c := rep.Cases[2]; !c.Pass || c.Answer != "Order 404 does not exist, so no refund." || len(c.ToolCalls) != 1 || c.ToolCalls[0].Error != "no such order" {
		t.Errorf("case 2 = %+v", c)
	}
	if rep.Usage.ModelCalls != 6 || rep.Usage.ToolCalls != 3 || rep.Usage.InputTokens != 32 || rep.Usage.CostUsd != 0.004 {
		t.Errorf("usage = %+v", rep.Usage)
	}
	if after := storeState(t, h); after != before {
		t.Error("eval.Run changed the host's runs")
	}
	if _, second := evaluate(); !bytes.Equal(first, second) {
		t.Errorf("two runs gave different reports:\n%s\n---\n%s", first, second)
	}
}

// TestUnrecordedToolCallFailsCase: under ReplayTools a call the run did
// not record fails that case, naming the tool and its arguments, and
// calls nothing; the other cases go on.
func TestUnrecordedToolCallFailsCase(t *testing.T) {
	ctx := t.Context()
	h := newHost(t)
	runs := recordThree(t, h)
	ds, err := eval.DatasetFromRuns(ctx, h.bindings(scripted.New(nil, nil)), tenant, runs[:2])
	if err != nil {
		t.Fatal(err)
	}
	p := scripted.New([]scripted.Response{
		scripted.Call("x1", "acme.lookup-order", map[string]any{"order": 7}),
		scripted.Call("x1", "acme.lookup-order", map[string]any{"order": 2, "verbose": true}),
		scripted.Say("Order 2 was delivered; a refund is possible."),
	}, nil)
	before := h.calls.Load()
	rep, err := eval.Run(ctx, ds, eval.Options{Agent: defineAgent(t, "1.1.0", "New."), Bindings: h.bindings(p), Tools: eval.ReplayTools})
	if err != nil {
		t.Fatal(err)
	}
	if n := h.calls.Load() - before; n != 0 {
		t.Errorf("the tool handler ran %d times, want 0", n)
	}
	c := rep.Cases[0]
	if c.Pass || c.Error == nil || c.Error.Code != agents.CodeToolInvocationFailed {
		t.Fatalf("case 0 = %+v", c)
	}
	if want := `unrecorded tool call under replay: acme.lookup-order with arguments {"order":7}`; c.Reason != want {
		t.Errorf("reason = %q, want %q", c.Reason, want)
	}
	if p.Calls() != 3 {
		t.Errorf("the provider was called %d times, want 3 (the failed case stops at its unrecorded call)", p.Calls())
	}
	if !rep.Cases[1].Pass || rep.Failed != 1 || rep.Regressed != 1 {
		t.Errorf("report = %+v", rep)
	}
}

// TestLiveToolsCallHandlers: a hand-written case under LiveTools (the
// default for a case without a baseline) calls the handler.
func TestLiveToolsCallHandlers(t *testing.T) {
	h := newHost(t)
	ds := eval.Dataset{Cases: []eval.Case{{ID: "hand-1", TenantID: tenant, UserMessage: "Order 5?", Parameters: map[string]any{"firmName": "Acme"},
		Expect: &eval.Expect{Contains: []string{"delivered"}}}}}
	p := scripted.New([]scripted.Response{scripted.Call("c", "acme.lookup-order", map[string]any{"order": 5}), scripted.Say("Order 5 was delivered.")}, nil)
	rep, err := eval.Run(t.Context(), ds, eval.Options{Agent: defineAgent(t, "1.1.0", "New."), Bindings: h.bindings(p)})
	if err != nil {
		t.Fatal(err)
	}
	if h.calls.Load() != 1 {
		t.Errorf("handler calls = %d, want 1", h.calls.Load())
	}
	c := rep.Cases[0]
	if !c.Pass || c.Regressed || len(c.Grades) != 1 || c.Grades[0].Name != `contains "delivered"` {
		t.Errorf("case = %+v", c)
	}
	if diff := cmp.Diff([]eval.RecordedCall{{ToolID: "acme.lookup-order", ToolVersion: "1.2.0", Arguments: json.RawMessage(`{"order":5}`),
		Output: json.RawMessage(`{"order":5,"status":"delivered","total":12.5}`)}}, c.ToolCalls); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
}

// TestGraderErrorsAreFailedGrades: a grader that errs or panics gives a
// failed grade with the reason; the run goes on.
func TestGraderErrorsAreFailedGrades(t *testing.T) {
	h := newHost(t)
	ds := eval.Dataset{Cases: []eval.Case{{ID: "c", TenantID: tenant, UserMessage: "Hi", Parameters: map[string]any{"firmName": "Acme"}}}}
	failing := eval.GraderFunc(func(context.Context, eval.GradeInput) (eval.Grade, error) {
		return eval.Grade{Name: "flaky"}, errors.New("backend down")
	})
	panicking := eval.GraderFunc(func(context.Context, eval.GradeInput) (eval.Grade, error) { panic("boom") })
	rep, err := eval.Run(t.Context(), ds, eval.Options{Agent: defineAgent(t, "1.1.0", "New."), Bindings: h.bindings(scripted.New([]scripted.Response{scripted.Say("Hello.")}, nil)),
		Graders: []eval.Grader{failing, panicking, eval.Matches("(")}})
	if err != nil {
		t.Fatal(err)
	}
	want := []eval.Grade{
		{Name: "flaky", Reason: "the grader failed: backend down"},
		{Name: "grader 2", Reason: "the grader panicked: boom"},
		{Name: "grader 3", Reason: "the grader failed: invalid message: eval.Matches: error parsing regexp: missing closing ): `(`"},
	}
	if diff := cmp.Diff(want, rep.Cases[0].Grades); diff != "" {
		t.Errorf("grades (-want +got):\n%s", diff)
	}
	if rep.Failed != 1 || rep.Cases[0].Pass {
		t.Errorf("report = %+v", rep)
	}
}

// TestRunRefusesBadOptions: options Run cannot run with are coded errors.
func TestRunRefusesBadOptions(t *testing.T) {
	h := newHost(t)
	a := defineAgent(t, "1.1.0", "New.")
	for _, tc := range []struct {
		name string
		opts eval.Options
		code string
	}{
		{"no agent", eval.Options{Bindings: h.bindings(scripted.New(nil, nil))}, agents.CodeInvalidAgent},
		{"no providers", eval.Options{Agent: a}, agents.CodeInvalidBindings},
		{"unknown tool mode", eval.Options{Agent: a, Bindings: h.bindings(scripted.New(nil, nil)), Tools: "maybe"}, agents.CodeInvalidMessage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := eval.Run(t.Context(), eval.Dataset{}, tc.opts); agents.CodeOf(err) != tc.code {
				t.Errorf("err = %v, want code %s", err, tc.code)
			}
		})
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	ds := eval.Dataset{Cases: []eval.Case{{ID: "c", UserMessage: "Hi"}}}
	if _, err := eval.Run(ctx, ds, eval.Options{Agent: a, Bindings: h.bindings(scripted.New(nil, nil))}); agents.CodeOf(err) != agents.CodeTurnAborted {
		t.Errorf("cancelled: err = %v, want turn-aborted", err)
	}
}
