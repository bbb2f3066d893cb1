package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

func TestInvokeCompletesATurn(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), nil)
	b := f.bindings()
	res := f.mustInvoke(t, b, "Draft a confidentiality clause.")
	if res.Status != turn.StatusCompleted || res.TurnNumber != 1 || res.Response.Content != "Clause C-7 fits: three years of confidentiality." {
		t.Fatalf("result = %+v", res)
	}
	want := turn.Usage{InputTokens: 300, OutputTokens: 30, CostUsd: 0.003, ModelCalls: 2, ToolCalls: 1}
	if diff := cmp.Diff(want, res.Usage, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	var roles []string
	for _, m := range res.Appended {
		roles = append(roles, string(m.Role))
	}
	if diff := cmp.Diff([]string{"user", "agent", "tool", "agent"}, roles); diff != "" {
		t.Errorf("appended roles (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(res.Appended, f.messages()); diff != "" {
		t.Errorf("stored messages differ from Appended (-appended +stored):\n%s", diff)
	}
	if len(res.Retrieved) == 0 || res.Retrieved[0].Fact.ID != "C-7" {
		t.Errorf("retrieved = %+v, want C-7 first", res.Retrieved)
	}
	if res.Provenance == nil {
		t.Fatal("no provenance")
	}
	if err := turn.VerifyProvenance(t.Context(), *res.Provenance, f.keys); err != nil {
		t.Errorf("VerifyProvenance: %v", err)
	}
	tampered := *res.Provenance
	tampered.Model = "other"
	if err := turn.VerifyProvenance(t.Context(), tampered, f.keys); agents.CodeOf(err) != agents.CodeInvalidMessage {
		t.Errorf("VerifyProvenance(tampered) = %v, want invalid-message", err)
	}
	wantEvents := []string{
		"turn.started", "retrieval.completed",
		"model.call.started", "model.call.completed", "tool.started", "tool.completed",
		"model.call.started", "model.call.completed", "agent.message", "turn.completed",
	}
	if diff := cmp.Diff(wantEvents, f.events.kinds()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// The model saw the system prompt with the facts, the user message,
	// then its tool call and the tool's result.
	reqs := f.provider.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model got %d requests, want 2", len(reqs))
	}
	sys := reqs[0].Messages[0]
	if sys.Role != bindings.ChatSystem || !strings.Contains(sys.Content, "Acme LLP") || !strings.Contains(sys.Content, "[C-7]") {
		t.Errorf("system message = %q", sys.Content)
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != bindings.ChatTool || last.ToolCallID != "call_1" || !strings.Contains(last.Content, "C-7") {
		t.Errorf("last message of the second request = %+v", last)
	}
}

// TestJournalListsEveryNodeInOrder checks a finished run's journal, and
// that driving it again over its journal calls nothing.
func TestJournalListsEveryNodeInOrder(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), nil)
	b := f.bindings()
	res := f.mustInvoke(t, b, "Draft a confidentiality clause.")
	var got []string
	for _, e := range f.journal(res.RunID) {
		if e.Status == bindings.StepCompleted {
			got = append(got, e.Key)
		}
	}
	want := []string{
		"setup", "render-prompt", "persist-user-message", "run-retrievals", "build-initial-messages",
		"agent-loop/1/model-call", "agent-loop/1/model-call/message", "agent-loop/1/dispatch-tools",
		"agent-loop/1/dispatch-tools/call_1", "agent-loop/1/dispatch-tools/call_1/message", "agent-loop/1/budget-check",
		"agent-loop/2/model-call", "agent-loop/2/budget-check",
		"evaluate-guardrails", "persist-final-message", "persist-provenance", "compose-result",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("completed steps (-want +got):\n%s", diff)
	}
	run, err := f.store.GetRun(t.Context(), tenant, res.RunID)
	if err != nil || run.Status != bindings.RunCompleted {
		t.Errorf("run = %+v, %v; want completed", run, err)
	}

	modelCalls, toolCalls, msgs := f.provider.Calls(), f.log.total(), len(f.messages())
	f.events.reset()
	again, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, f.bindings())
	if err != nil {
		t.Fatalf("Resume of a finished run: %v", err)
	}
	in := f.input("Draft a confidentiality clause.")
	in.RunID = res.RunID
	again2, err := turn.Invoke(t.Context(), in, f.bindings())
	if err != nil {
		t.Fatalf("Invoke of a finished run: %v", err)
	}
	if f.provider.Calls() != modelCalls || f.log.total() != toolCalls || len(f.messages()) != msgs {
		t.Errorf("re-driving called something: model %d→%d, tools %d→%d, messages %d→%d",
			modelCalls, f.provider.Calls(), toolCalls, f.log.total(), msgs, len(f.messages()))
	}
	if diff := cmp.Diff(res, again); diff != "" {
		t.Errorf("Resume result differs (-first +again):\n%s", diff)
	}
	if diff := cmp.Diff(res, again2); diff != "" {
		t.Errorf("Invoke result differs (-first +again):\n%s", diff)
	}
	if k := f.events.kinds(); len(k) != 0 {
		t.Errorf("re-driving a finished run emitted %v", k)
	}
	// A finished run needs no provider to return its result.
	gone := f.bindings()
	gone.Providers = bindings.Providers{}
	again3, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, gone)
	if err != nil {
		t.Fatalf("Resume of a finished run without its provider: %v", err)
	}
	if diff := cmp.Diff(res, again3); diff != "" {
		t.Errorf("result without the provider differs (-first +again):\n%s", diff)
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	f := newFixture(t, nil, nil)
	in := f.input("Draft a confidentiality clause.")
	in.DryRun = true
	res, err := turn.Invoke(t.Context(), in, f.bindings())
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if !res.DryRun || len(res.Appended) != 0 || res.Provenance != nil || f.provider.Calls() != 0 {
		t.Errorf("dry run: %+v, model calls %d", res, f.provider.Calls())
	}
	if n := len(f.messages()); n != 0 {
		t.Errorf("dry run stored %d messages", n)
	}
	if recs := f.store.ProvenanceRecords(tenant); len(recs) != 0 {
		t.Errorf("dry run stored provenance %+v", recs)
	}
}

func TestToolArgumentsAreValidated(t *testing.T) {
	f := newFixture(t, []scripted.Response{
		scripted.Call("call_1", "acme.clause-search", map[string]any{"query": 7}),
		scripted.Call("call_2", "acme.unknown", map[string]any{}),
		scripted.Say("Sorry."),
	}, nil)
	res := f.mustInvoke(t, f.bindings(), "Find a clause.")
	if f.log.total() != 0 {
		t.Errorf("a tool with invalid arguments ran: %v", f.log.calls)
	}
	reqs := f.provider.Requests()
	tool1 := reqs[1].Messages[len(reqs[1].Messages)-1]
	if tool1.Role != bindings.ChatTool || !strings.Contains(tool1.Content, "invalid arguments") {
		t.Errorf("model was told %+v, want invalid arguments", tool1)
	}
	tool2 := reqs[2].Messages[len(reqs[2].Messages)-1]
	if !strings.Contains(tool2.Content, "not available") {
		t.Errorf("model was told %+v, want not available", tool2)
	}
	if res.Usage.ToolCalls != 0 {
		t.Errorf("usage counts %d tool calls", res.Usage.ToolCalls)
	}
}

func TestAuthzDeniedCallNeverRuns(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), nil)
	b := f.bindings()
	b.Authz = authzFunc(func(req bindings.AuthzRequest) bindings.AuthzDecision {
		return bindings.AuthzDecision{Allowed: false, Reason: "paralegals may not search clauses"}
	})
	in := f.input("Find a clause.")
	in.Principal = &bindings.Principal{ID: "pat", Roles: []string{"paralegal"}}
	if _, err := turn.Invoke(t.Context(), in, b); err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if f.log.total() != 0 {
		t.Errorf("a denied call ran")
	}
	reqs := f.provider.Requests()
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if !strings.Contains(last.Content, "not authorized: paralegals may not search clauses") {
		t.Errorf("model was told %q", last.Content)
	}
}

type authzFunc func(bindings.AuthzRequest) bindings.AuthzDecision

func (f authzFunc) Authorize(_ context.Context, req bindings.AuthzRequest) (bindings.AuthzDecision, error) {
	return f(req), nil
}

func TestEventHandlerPanicIsIgnored(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), nil)
	b := f.bindings()
	b.OnEvent = func(context.Context, turn.Event) { panic("handler bug") }
	if _, err := turn.Invoke(t.Context(), f.input("Draft."), b); err != nil {
		t.Fatalf("Invoke: %v", err)
	}
}

func TestFailedRunReplaysItsError(t *testing.T) {
	f := newFixture(t, []scripted.Response{{Err: errors.New("upstream 500")}}, nil)
	_, err := turn.Invoke(t.Context(), f.input("Draft."), f.bindings())
	var mie *agents.ModelInvocationError
	if !errors.As(err, &mie) {
		t.Fatalf("Invoke error = %v, want ModelInvocationError", err)
	}
	runID := mustRunID(t, f)
	_, err2 := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: runID, Agent: f.agent}, f.bindings())
	if !errors.As(err2, &mie) || err2.Error() != err.Error() {
		t.Errorf("Resume of a failed run = %v, want %v", err2, err)
	}
	if f.provider.Calls() != 1 {
		t.Errorf("model called %d times, want 1", f.provider.Calls())
	}
}

// mustRunID finds the one run of the fixture through its snapshot-bearing
// messages' run ids.
func mustRunID(t *testing.T, f *fixture) string {
	t.Helper()
	for _, m := range f.messages() {
		if m.RunID != "" {
			return m.RunID
		}
	}
	t.Fatal("no message carries a run id")
	return ""
}

func TestFormatRetrievedForPrompt(t *testing.T) {
	if got := turn.FormatRetrievedForPrompt(nil); got != "" {
		t.Errorf("no facts: %q", got)
	}
	got := turn.FormatRetrievedForPrompt([]turn.RetrievedFact{
		{Fact: bindings.Fact{ID: "C-7", Type: "acme.clause", Text: "Three years.\nMutual."}},
	})
	want := "## Retrieved facts\nFacts from memory that may help; cite a fact by its id.\n- [C-7] (acme.clause) Three years. Mutual.\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSnapshotStoresTheInput(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), nil)
	res := f.mustInvoke(t, f.bindings(), "Draft.")
	snap, err := f.store.Read(t.Context(), tenant, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var in map[string]any
	if err := json.Unmarshal(snap.Input, &in); err != nil {
		t.Fatal(err)
	}
	if in["userMessage"] != "Draft." || snap.FlowID != turn.FlowID || snap.FlowVersion != turn.FlowVersion || snap.AgentVersion != "1.0.0" {
		t.Errorf("snapshot = %+v, input %v", snap, in)
	}
}

// TestHistoryDropsUnansweredCalls: a model API rejects a call without its
// result and a result without its call; the history window must hold
// neither.
func TestHistoryDropsUnansweredCalls(t *testing.T) {
	f := newFixture(t, []scripted.Response{scripted.Say("ok")}, nil)
	ctx := t.Context()
	// Turn 1 failed after its call; turn 2 completed. (A user message
	// opens its turn: one per turn number.)
	for _, m := range []bindings.AppendMessageInput{
		{Role: bindings.RoleUser, Content: "first", TurnNumber: 1},
		{Role: bindings.RoleAgent, ToolCalls: []bindings.ToolCall{{ID: "lost", Name: "acme.clause-search", Arguments: json.RawMessage(`{}`)}}, TurnNumber: 1},
		{Role: bindings.RoleUser, Content: "second", TurnNumber: 2},
		{Role: bindings.RoleAgent, ToolCalls: []bindings.ToolCall{{ID: "kept", Name: "acme.clause-search", Arguments: json.RawMessage(`{}`)}}, TurnNumber: 2},
		{Role: bindings.RoleTool, ToolCallID: "kept", Content: "{}", TurnNumber: 2},
		{Role: bindings.RoleAgent, Content: "answer", TurnNumber: 2},
	} {
		m.TenantID, m.ConversationID = tenant, f.conv.ID
		if _, err := f.store.AppendMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := turn.Invoke(ctx, f.input("third"), f.bindings()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range f.provider.Requests()[0].Messages[1:] {
		s := string(m.Role) + ":" + m.Content
		for _, c := range m.ToolCalls {
			s += "+call " + c.ID
		}
		if m.ToolCallID != "" {
			s += "+for " + m.ToolCallID
		}
		got = append(got, s)
	}
	want := []string{"user:first", "user:second", "assistant:+call kept", "tool:{}+for kept", "assistant:answer", "user:third"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

// TestToolOutputIsUsedAsJournaled: a tool's output reaches the model and
// the conversation in the form the journal stores, so a replay after a
// crash sees the same bytes.
func TestToolOutputIsUsedAsJournaled(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), nil)
	f.addTool("acme.clause-search", "1.6.0", clauseSchema, func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
		return json.RawMessage("{ \"html\" : \"<b>C-7</b>\" }\n"), nil
	})
	res := f.mustInvoke(t, f.bindings(), "Find.")
	var stored struct{ Output json.RawMessage }
	for _, e := range f.journal(res.RunID) {
		if e.Key == "agent-loop/1/dispatch-tools/call_1" && e.Status == bindings.StepCompleted {
			if err := json.Unmarshal(e.Output, &stored); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := `{"html":"\u003cb\u003eC-7\u003c/b\u003e"}`
	if string(stored.Output) != want {
		t.Fatalf("journaled output = %s", stored.Output)
	}
	if got := res.Appended[2].Content; got != want {
		t.Errorf("stored tool message = %s, want the journaled form %s", got, want)
	}
	reqs := f.provider.Requests()
	if got := reqs[1].Messages[len(reqs[1].Messages)-1].Content; got != want {
		t.Errorf("the model saw %s, want the journaled form %s", got, want)
	}
}

// TestHaltingGuardrailNeverWritesTheResponse: the run fails with
// guardrail-violation, the response is not stored, and the failure is
// final (a re-drive returns it without calling the model).
func TestHaltingGuardrailNeverWritesTheResponse(t *testing.T) {
	f := newFixture(t, []scripted.Response{scripted.Say("Mail jane@globex.test.")}, nil)
	_, err := turn.Invoke(t.Context(), f.input("Who?"), f.bindings())
	var gv *agents.GuardrailViolationError
	if !errors.As(err, &gv) || gv.GuardrailID != "acme.no-pii" {
		t.Fatalf("Invoke = %v, want guardrail-violation of acme.no-pii", err)
	}
	msgs := f.messages()
	if len(msgs) != 1 || msgs[0].Role != bindings.RoleUser {
		t.Errorf("stored messages = %+v, want only the user's", msgs)
	}
	runID := msgs[0].RunID
	run, _ := f.store.GetRun(t.Context(), tenant, runID)
	if run.Status != bindings.RunFailed {
		t.Errorf("run status = %s, want failed", run.Status)
	}
	var failed []string
	for _, e := range f.journal(runID) {
		if e.Status == bindings.StepFailed {
			failed = append(failed, e.Key+" "+e.Error.Code)
		}
	}
	// The outcomes are journaled (evaluate-guardrails completed, so they can
	// be recorded for compliance), then the halt fails the turn.
	if diff := cmp.Diff([]string{"evaluate-guardrails/halt guardrail-violation", "compose-result guardrail-violation"}, failed); diff != "" {
		t.Errorf("failed entries (-want +got):\n%s", diff)
	}
	_, err2 := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: runID, Agent: f.agent}, f.bindings())
	if !errors.As(err2, &gv) || f.provider.Calls() != 1 {
		t.Errorf("re-drive = %v after %d model calls", err2, f.provider.Calls())
	}
}

// TestCancelledTurnStaysStopped: cancelling ctx stops the run for good; a
// later Resume returns the same turn-aborted error and calls nothing.
func TestCancelledTurnStaysStopped(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), nil)
	ctx, cancel := context.WithCancel(t.Context())
	var runID string
	f.addTool("acme.clause-search", "1.7.0", clauseSchema, func(_ context.Context, _ json.RawMessage, call bindings.CallContext) (json.RawMessage, error) {
		runID = call.RunID
		cancel()
		return json.RawMessage(`{}`), nil
	})
	_, err := turn.Invoke(ctx, f.input("Find."), f.bindings())
	var ta *agents.TurnAbortedError
	if !errors.As(err, &ta) || ta.Reason != agents.AbortExternal {
		t.Fatalf("Invoke = %v, want turn-aborted external", err)
	}
	run, _ := f.store.GetRun(t.Context(), tenant, runID)
	if run.Status != bindings.RunFailed || run.LeaseOwner != "" {
		t.Errorf("run = %+v, want failed and released", run)
	}
	calls, tools := f.provider.Calls(), f.log.total()
	_, err = turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: runID, Agent: f.agent}, f.bindings())
	if !errors.As(err, &ta) || ta.Reason != agents.AbortExternal {
		t.Errorf("Resume = %v, want the same turn-aborted", err)
	}
	if f.provider.Calls() != calls || f.log.total() != tools {
		t.Errorf("Resume of a stopped run called the model or a tool")
	}
}
