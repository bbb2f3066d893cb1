package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// quotaBindings are the fixture's bindings with quotas counted in its
// store.
func quotaBindings(f *fixture, qs ...bindings.Quota) turn.Bindings {
	b := f.bindings()
	b.Quotas = f.store
	b.TenantPolicy = &bindings.TenantPolicy{Quotas: qs}
	b.Agents = func(_ context.Context, _, id, version string) (agent.Agent, error) {
		if id != f.agent.ID || version != f.agent.Version {
			return agent.Agent{}, &agents.AgentNotFoundError{ID: id, Version: version}
		}
		return f.agent, nil
	}
	return b
}

func says(n int) []scripted.Response {
	var out []scripted.Response
	for range n {
		out = append(out, scripted.Say("Clause C-7 fits.").WithUsage(200, 20, 0.002))
	}
	return out
}

func used(t *testing.T, f *fixture, tenantID, name string) float64 {
	t.Helper()
	us, err := f.store.QuotaUsage(t.Context(), tenantID, time.Time{})
	if err != nil {
		t.Fatalf("QuotaUsage: %v", err)
	}
	for _, u := range us {
		if u.Quota.Name == name {
			return u.Used
		}
	}
	return 0
}

// TestQuotaFailEndsTheTurnBeforeTheModelCall: past a model-calls quota
// with onExceeded fail, the turn ends quota-exceeded with a RetryAfter and
// its run id, the run is failed, and the model is not called.
func TestQuotaFailEndsTheTurnBeforeTheModelCall(t *testing.T) {
	f := newFixture(t, says(3), nil)
	b := quotaBindings(f, bindings.Quota{Name: "per-minute", Scope: bindings.QuotaModelCalls, Limit: 1, WindowSeconds: 60})
	if _, err := turn.Invoke(t.Context(), f.input("first"), b); err != nil {
		t.Fatalf("first turn: %v", err)
	}
	f.clock.Advance(15 * time.Second)
	res, err := turn.Invoke(t.Context(), f.input("second"), b)
	var qe *agents.QuotaExceededError
	if !errors.As(err, &qe) || agents.CodeOf(err) != agents.CodeQuotaExceeded || qe.Quota != "per-minute" || qe.RetryAfter != 45*time.Second {
		t.Fatalf("second turn: %v (%+v), want quota-exceeded of per-minute retrying after 45s", err, qe)
	}
	if agents.IsRetryable(err) {
		t.Error("quota-exceeded is retryable")
	}
	if f.provider.Calls() != 1 {
		t.Errorf("the model was called %d times, want 1 (none past the quota)", f.provider.Calls())
	}
	run, gerr := f.store.GetRun(t.Context(), tenant, res.RunID)
	if gerr != nil || run.Status != bindings.RunFailed {
		t.Fatalf("run %q: %+v, %v; want failed", res.RunID, run, gerr)
	}
	// A resume replays the same typed failure, calling nothing.
	_, err = turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID}, b)
	if !errors.As(err, &qe) || qe.Quota != "per-minute" {
		t.Fatalf("resume: %v, want the recorded quota-exceeded", err)
	}
	if got := used(t, f, tenant, "per-minute"); got != 1 {
		t.Errorf("per-minute used %v, want 1", got)
	}
}

// TestQuotaTurnsAndTokens: a turns quota refuses the turn at its start; a
// tokens quota is checked before a call and counted after it with the
// call's real usage, so the call that crosses the limit ends over it and
// the next one is refused.
func TestQuotaTurnsAndTokens(t *testing.T) {
	t.Run("turns", func(t *testing.T) {
		f := newFixture(t, says(2), nil)
		b := quotaBindings(f, bindings.Quota{Name: "turns", Scope: bindings.QuotaTurns, Limit: 1, WindowSeconds: 3600})
		if _, err := turn.Invoke(t.Context(), f.input("first"), b); err != nil {
			t.Fatalf("first turn: %v", err)
		}
		if _, err := turn.Invoke(t.Context(), f.input("second"), b); agents.CodeOf(err) != agents.CodeQuotaExceeded {
			t.Fatalf("second turn: %v, want quota-exceeded", err)
		}
		if f.provider.Calls() != 1 {
			t.Errorf("%d model calls, want 1", f.provider.Calls())
		}
	})
	t.Run("tokens", func(t *testing.T) {
		f := newFixture(t, says(3), nil)
		b := quotaBindings(f, bindings.Quota{Name: "tokens", Scope: bindings.QuotaTokens, Limit: 300, WindowSeconds: 3600},
			bindings.Quota{Name: "spend", Scope: bindings.QuotaCostUsd, Limit: 1, WindowSeconds: 3600})
		for _, msg := range []string{"first", "second"} {
			if _, err := turn.Invoke(t.Context(), f.input(msg), b); err != nil {
				t.Fatalf("%s turn: %v", msg, err)
			}
		}
		if got := used(t, f, tenant, "tokens"); got != 440 {
			t.Errorf("tokens used %v, want 440 (the second call ends over the limit)", got)
		}
		if got := used(t, f, tenant, "spend"); got < 0.0039 || got > 0.0041 {
			t.Errorf("spend used %v, want 0.004", got)
		}
		if _, err := turn.Invoke(t.Context(), f.input("third"), b); agents.CodeOf(err) != agents.CodeQuotaExceeded {
			t.Fatalf("third turn: %v, want quota-exceeded", err)
		}
		if f.provider.Calls() != 2 {
			t.Errorf("%d model calls, want 2", f.provider.Calls())
		}
	})
}

// TestQuotaOfOneToolRefusesOnlyThatTool: past a tool-calls quota of one
// tool, that tool's call never runs and the model is told which quota
// refused it; another tool in the same response runs; another tenant's
// calls of the tool run.
func TestQuotaOfOneToolRefusesOnlyThatTool(t *testing.T) {
	search := func(id string) scripted.Response {
		return scripted.Call(id, "acme.clause-search", map[string]any{"query": "confidentiality"}).WithUsage(10, 1, 0)
	}
	script := []scripted.Response{
		search("call_1"),
		scripted.Response{ToolCalls: []bindings.ToolCall{
			scripted.ToolCall("call_2", "acme.clause-search", map[string]any{"query": "term"}),
			scripted.ToolCall("call_3", "acme.send-email", map[string]any{"to": "a@b.test", "subject": "s", "body": "b"}),
		}, FinishReason: "tool_calls"}.WithUsage(10, 1, 0),
		scripted.Say("Done.").WithUsage(10, 1, 0),
		// The other tenant's turn.
		search("call_1"),
		scripted.Say("Done.").WithUsage(10, 1, 0),
	}
	f := newFixture(t, script, func(s *agent.Spec) { s.ConversationPolicy = nil; s.Guardrails = nil })
	q := bindings.Quota{Name: "searches", Scope: bindings.QuotaToolCalls, ToolID: "acme.clause-search", Limit: 1, WindowSeconds: 3600}
	b := quotaBindings(f, q)
	b.Guardrails, b.Checks = nil, nil
	res, err := turn.Invoke(t.Context(), f.input("search twice and mail"), b)
	if err != nil || res.Status != turn.StatusCompleted {
		t.Fatalf("turn: %+v, %v", res.Status, err)
	}
	if n := f.log.count("acme.clause-search"); n != 1 {
		t.Errorf("clause-search ran %d times, want 1", n)
	}
	if n := f.log.count("acme.send-email"); n != 1 {
		t.Errorf("send-email ran %d times, want 1 (its tool is not under the quota)", n)
	}
	reqs := f.provider.Requests()
	last := reqs[len(reqs)-1]
	told := false
	for _, m := range last.Messages {
		if m.Role == bindings.ChatTool && m.ToolCallID == "call_2" && strings.Contains(m.Content, `quota \"searches\"`) {
			told = true
		}
	}
	if !told {
		t.Errorf("the model was not told that quota searches refused call_2: %+v", last.Messages)
	}

	// Another tenant with the same quota name is unaffected.
	const other = "globex"
	for _, d := range []struct {
		id, version string
		schema      json.RawMessage
	}{{"acme.clause-search", "1.2.0", clauseSchema}, {"acme.send-email", "2.1.3", emailSchema}} {
		if err := f.tools.Add(other, bindings.ToolDescriptor{ID: d.id, Version: d.version, InputSchema: d.schema},
			func(_ context.Context, _ json.RawMessage, call bindings.CallContext) (json.RawMessage, error) {
				f.log.record(other+"/"+d.id, call.RequestID)
				return json.RawMessage(`{}`), nil
			}); err != nil {
			t.Fatal(err)
		}
	}
	conv, err := f.store.OpenConversation(t.Context(), bindings.OpenConversationInput{TenantID: other, ProjectID: project, ID: "conv-g", AgentID: f.agent.ID, AgentVersion: f.agent.Version})
	if err != nil {
		t.Fatal(err)
	}
	in := f.input("search")
	in.TenantID, in.ConversationID = other, conv.ID
	if res, err := turn.Invoke(t.Context(), in, b); err != nil || res.Status != turn.StatusCompleted {
		t.Fatalf("other tenant's turn: %+v, %v", res.Status, err)
	}
	if n := f.log.count(other + "/acme.clause-search"); n != 1 {
		t.Errorf("the other tenant's clause-search ran %d times, want 1", n)
	}
	if got := used(t, f, other, "searches"); got != 1 {
		t.Errorf("other tenant's searches used %v, want 1", got)
	}
}

// TestQuotaWaitQueuesTheRunUntilTheWindowFrees: past a wait quota, Invoke
// returns quota-exceeded at once with the run id, the run is queued (not
// failed) with NotBefore when the window frees, no claim takes it before,
// and a worker finishes it after, with no Resume; Wait waits it out.
func TestQuotaWaitQueuesTheRunUntilTheWindowFrees(t *testing.T) {
	f := newFixture(t, says(2), nil)
	b := quotaBindings(f, bindings.Quota{Name: "per-minute", Scope: bindings.QuotaModelCalls, Limit: 1, WindowSeconds: 60, OnExceeded: bindings.QuotaWait})
	if _, err := turn.Invoke(t.Context(), f.input("first"), b); err != nil {
		t.Fatalf("first turn: %v", err)
	}
	f.clock.Advance(20 * time.Second)
	res, err := turn.Invoke(t.Context(), f.input("second"), b)
	var qe *agents.QuotaExceededError
	if !errors.As(err, &qe) || qe.RetryAfter != 40*time.Second || res.RunID == "" {
		t.Fatalf("second turn: %+v, %v; want quota-exceeded retrying after 40s, with the run id", res, err)
	}
	run, gerr := f.store.GetRun(t.Context(), tenant, res.RunID)
	if gerr != nil || run.Status != bindings.RunQueued || run.LeaseOwner != "" || !run.NotBefore.Equal(f.clock.Now().Add(40*time.Second)) {
		t.Fatalf("waiting run: %+v, %v; want queued, free, not before 40s on", run, gerr)
	}
	if f.provider.Calls() != 1 {
		t.Fatalf("%d model calls, want 1", f.provider.Calls())
	}
	startWorker(t, b, turn.WorkerOptions{PollInterval: 5 * time.Millisecond})
	time.Sleep(50 * time.Millisecond) // claims before NotBefore find nothing
	if run, _ := f.store.GetRun(t.Context(), tenant, res.RunID); run.Status != bindings.RunQueued {
		t.Fatalf("the run was taken before its window freed: %+v", run)
	}
	f.clock.Advance(40 * time.Second)
	got, err := waitFor(t, b, res.RunID, 20*time.Second)
	if err != nil || got.Status != turn.StatusCompleted {
		t.Fatalf("Wait: %+v, %v; want completed", got.Status, err)
	}
	if f.provider.Calls() != 2 {
		t.Errorf("%d model calls, want 2", f.provider.Calls())
	}
	if got := used(t, f, tenant, "per-minute"); got != 1 {
		t.Errorf("per-minute used %v in the window, want 1 (the first call left it)", got)
	}
}

// TestQuotaPolicyIsValidated: an invalid quota fails the turn with
// invalid-message naming the field; quotas without a counter are invalid
// bindings.
func TestQuotaPolicyIsValidated(t *testing.T) {
	f := newFixture(t, says(1), nil)
	b := quotaBindings(f, bindings.Quota{Name: "bad", Scope: bindings.QuotaModelCalls, Limit: 1, WindowSeconds: 0})
	_, err := turn.Invoke(t.Context(), f.input("hi"), b)
	if agents.CodeOf(err) != agents.CodeInvalidMessage || !strings.Contains(err.Error(), "quotas[0].windowSeconds") {
		t.Fatalf("invalid quota: %v, want invalid-message naming quotas[0].windowSeconds", err)
	}
	b = quotaBindings(f, bindings.Quota{Name: "ok", Scope: bindings.QuotaModelCalls, Limit: 1, WindowSeconds: 1})
	b.Quotas = nil
	if _, err := turn.Invoke(t.Context(), f.input("hi"), b); agents.CodeOf(err) != agents.CodeInvalidBindings {
		t.Fatalf("quotas without a counter: %v, want invalid-bindings", err)
	}
	if f.provider.Calls() != 0 {
		t.Errorf("%d model calls, want none", f.provider.Calls())
	}
}

// TestQuotaFromThePolicyRegistry: the registry's quota kind is read at
// every drive and replaces a static quota of the same name; a registry
// that cannot answer leaves the run unfinished (tenant-policy-unavailable).
func TestQuotaFromThePolicyRegistry(t *testing.T) {
	f := newFixture(t, says(3), nil)
	b := quotaBindings(f, bindings.Quota{Name: "calls", Scope: bindings.QuotaModelCalls, Limit: 10, WindowSeconds: 60})
	down := false
	b.PolicyRegistry = memstore.Policies{
		ByTenant: map[string]map[string]bindings.TenantPolicy{tenant: {
			bindings.PolicyKindQuota: {Quotas: []bindings.Quota{{Name: "calls", Scope: bindings.QuotaModelCalls, Limit: 1, WindowSeconds: 60}}},
		}},
		Fail: func(req bindings.PolicyRequest) error {
			if down && req.Kind == bindings.PolicyKindQuota {
				return errors.New("policy service down")
			}
			return nil
		},
	}
	if _, err := turn.Invoke(t.Context(), f.input("first"), b); err != nil {
		t.Fatalf("first turn: %v", err)
	}
	if _, err := turn.Invoke(t.Context(), f.input("second"), b); agents.CodeOf(err) != agents.CodeQuotaExceeded {
		t.Fatalf("second turn: %v, want quota-exceeded (the registry's limit of 1)", err)
	}
	down = true
	f.clock.Advance(time.Minute)
	res, err := turn.Invoke(t.Context(), f.input("third"), b)
	if agents.CodeOf(err) != agents.CodeTenantPolicyUnavailable {
		t.Fatalf("third turn: %v, want tenant-policy-unavailable", err)
	}
	if run, _ := f.store.GetRun(t.Context(), tenant, res.RunID); run.Status.Terminal() {
		t.Errorf("a policy outage ended the run: %+v", run)
	}
	if f.provider.Calls() != 1 {
		t.Errorf("%d model calls, want 1", f.provider.Calls())
	}
}
