package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

func TestMergePolicies(t *testing.T) {
	f64 := func(v float64) *float64 { return &v }
	i := func(v int) *int { return &v }
	strs := func(s ...string) *[]string { return &s }
	tests := []struct {
		name string
		in   []*bindings.TenantPolicy
		want turn.Policy
	}{
		{name: "nothing", want: turn.Policy{}},
		{
			name: "allow lists intersect, deny lists union, smaller caps win",
			in: []*bindings.TenantPolicy{
				{AllowProviders: []string{"a", "b"}, DenyModels: []string{"x"}, MaxCostUsd: f64(1), MaxSteps: i(4)},
				nil,
				{AllowProviders: []string{"b", "c"}, DenyModels: []string{"y", "x"}, MaxCostUsd: f64(0.5), MaxSteps: i(9)},
			},
			want: turn.Policy{AllowProviders: strs("b"), DenyModels: []string{"x", "y"}, MaxCostUsd: f64(0.5), MaxSteps: i(4)},
		},
		{
			name: "disjoint allow lists allow nothing",
			in:   []*bindings.TenantPolicy{{AllowModels: []string{"m1"}}, {AllowModels: []string{"m2"}}},
			want: turn.Policy{AllowModels: &[]string{}},
		},
		{
			name: "an empty allow list allows everything",
			in:   []*bindings.TenantPolicy{{AllowModels: []string{"m1"}}, {}},
			want: turn.Policy{AllowModels: strs("m1")},
		},
		{
			name: "hitl specs merge to the stricter",
			in: []*bindings.TenantPolicy{
				{Hitl: &bindings.HitlSpec{MinReviewerRole: turn.RoleSenior, OnTimeout: turn.OnTimeoutFail, ToolFloors: map[string]agent.ToolGate{"t": {Mode: agent.GateAskOnFirstUse}}}},
				{Hitl: &bindings.HitlSpec{MinReviewerRole: turn.RoleStandard, OnTimeout: turn.OnTimeoutDeny, AfterTurns: i(3), ToolFloors: map[string]agent.ToolGate{"t": {Mode: agent.GateAlwaysAsk}}}},
			},
			want: turn.Policy{Hitl: &bindings.HitlSpec{MinReviewerRole: turn.RoleSenior, OnTimeout: turn.OnTimeoutFail, AfterTurns: i(3), ToolFloors: map[string]agent.ToolGate{"t": {Mode: agent.GateAlwaysAsk}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, turn.MergePolicies(tt.in...)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestRouting checks preference handling and the refusals reported.
func TestRouting(t *testing.T) {
	models := func(ids ...string) []bindings.ModelInfo {
		var ms []bindings.ModelInfo
		for _, id := range ids {
			ms = append(ms, bindings.ModelInfo{ID: id, Features: []string{"tool-use"}})
		}
		return ms
	}
	p1 := scripted.New([]scripted.Response{scripted.Say("from p1")}, &scripted.Options{ID: "p1", Models: models("a", "b"), Loop: true})
	p2 := scripted.New([]scripted.Response{scripted.Say("from p2")}, &scripted.Options{ID: "p2", Models: models("c", "d"), Loop: true})
	tests := []struct {
		name      string
		provider  string
		model     string
		policy    *bindings.TenantPolicy
		want      turn.ProviderRef
		refusals  int
		wantError bool
	}{
		{name: "first candidate", want: turn.ProviderRef{Provider: "p1", Model: "a"}},
		{name: "preferred provider and model", provider: "p2", model: "d", want: turn.ProviderRef{Provider: "p2", Model: "d"}},
		{name: "preferred model refused by policy falls back", provider: "p2", model: "d",
			policy: &bindings.TenantPolicy{DenyModels: []string{"p2/d"}}, want: turn.ProviderRef{Provider: "p2", Model: "c"}},
		{name: "unknown preferred provider falls back", provider: "p9", want: turn.ProviderRef{Provider: "p1", Model: "a"}},
		{name: "allow list", policy: &bindings.TenantPolicy{AllowModels: []string{"d"}}, want: turn.ProviderRef{Provider: "p2", Model: "d"}},
		{name: "nothing allowed", policy: &bindings.TenantPolicy{AllowProviders: []string{"p3"}}, wantError: true, refusals: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil, func(s *agent.Spec) {
				s.PreferredProvider = tt.provider
				s.Retrieval, s.Guardrails = nil, nil
			})
			f.agent.PreferredModel = tt.model
			b := f.bindings()
			b.Providers = bindings.Providers{p1, p2}
			b.TenantPolicy = tt.policy
			res, err := turn.Invoke(t.Context(), f.input("Hello."), b)
			if tt.wantError {
				var cre *agents.CapabilityRoutingError
				if !errors.As(err, &cre) || len(cre.Refusals) != tt.refusals {
					t.Fatalf("Invoke = %v, want routing error with %d refusals", err, tt.refusals)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Provider != tt.want {
				t.Errorf("routed to %+v, want %+v", res.Provider, tt.want)
			}
		})
	}
}

func TestToolCallContext(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), nil)
	var got bindings.CallContext
	if err := f.tools.Add(tenant, bindings.ToolDescriptor{
		ID: "acme.clause-search", Version: "1.4.0", InputSchema: clauseSchema,
		Secrets: []string{"LIBRARY_TOKEN"}, Env: map[string]string{"REGION": "eu"}, Config: map[string]any{"max": 3.0},
	}, func(_ context.Context, _ json.RawMessage, call bindings.CallContext) (json.RawMessage, error) {
		got = call
		return json.RawMessage(`{}`), nil
	}); err != nil {
		t.Fatal(err)
	}
	b := f.bindings()
	b.Secrets = memstore.Secrets{tenant: {"LIBRARY_TOKEN": "s3cret"}}
	in := f.input("Find a clause.")
	in.Principal = &bindings.Principal{ID: "pat"}
	res, err := turn.Invoke(t.Context(), in, b)
	if err != nil {
		t.Fatal(err)
	}
	want := bindings.CallContext{
		TenantID: tenant, RunID: res.RunID, ConversationID: f.conv.ID, AgentID: f.agent.ID,
		RequestID: res.RunID + "/agent-loop/1/dispatch-tools/call_1", PrincipalID: "pat",
		Env: map[string]string{"REGION": "eu"}, Secrets: map[string]string{"LIBRARY_TOKEN": "s3cret"}, Config: map[string]any{"max": 3.0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("call context (-want +got):\n%s", diff)
	}
	for _, e := range f.journal(res.RunID) {
		if strings.Contains(string(e.Output), "s3cret") {
			t.Errorf("a secret reached the journal in %s", e.Key)
		}
	}

	// Without a secret resolver the call cannot be made.
	f2 := newFixture(t, searchThenAnswer(), nil)
	_ = f2.tools.Add(tenant, bindings.ToolDescriptor{ID: "acme.clause-search", Version: "1.4.0", InputSchema: clauseSchema, Secrets: []string{"LIBRARY_TOKEN"}},
		func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
			return json.RawMessage(`{}`), nil
		})
	if _, err := turn.Invoke(t.Context(), f2.input("Find."), f2.bindings()); agents.CodeOf(err) != agents.CodeToolInvocationFailed {
		t.Errorf("no resolver: %v, want tool-invocation-failed", err)
	}
}

// judgeCheck is an llm-judge check that asks its judge.
type judgeCheck struct{ asked *int }

func (judgeCheck) Evaluate(context.Context, json.RawMessage, bindings.RunTrace) (bindings.CheckResult, error) {
	return bindings.CheckResult{}, errors.New("an llm-judge check must be given a judge")
}

func (j judgeCheck) EvaluateWithJudge(ctx context.Context, _ json.RawMessage, trace bindings.RunTrace, judge bindings.Judge) (bindings.CheckResult, error) {
	*j.asked++
	resp, err := judge.Judge(ctx, []bindings.ChatMessage{{Role: bindings.ChatUser, Content: "Is this polite? " + trace.Response.Content}})
	if err != nil {
		return bindings.CheckResult{}, err
	}
	return bindings.CheckResult{Passed: resp.Text == "yes", Reason: "judge said " + resp.Text, JudgeResponse: resp.Text}, nil
}

// TestNonHaltingViolationsAreReported: failed guardrails whose action is
// not halt are reported and the response is still stored; an llm-judge
// guardrail asks the turn's model.
func TestNonHaltingViolationsAreReported(t *testing.T) {
	f := newFixture(t, []scripted.Response{
		scripted.Say("Write to jane@globex.test."),
		scripted.Say("no").WithUsage(5, 1, 0.0001), // the judge's answer
	}, func(s *agent.Spec) { s.Guardrails = []string{"acme.no-pii", "acme.polite"} })
	asked := 0
	b := f.bindings()
	b.Guardrails = memstore.Guardrails{Shared: map[string]bindings.Guardrail{
		"acme.no-pii": {ID: "acme.no-pii", Kind: "pattern", CheckID: "no-pii", Action: bindings.ActionLog},
		"acme.polite": {ID: "acme.polite", Kind: bindings.KindLLMJudge, CheckID: "polite", Action: "escalate"},
	}}
	b.Checks = memstore.Checks{"no-pii": bindings.CheckFunc(noPII), "polite": judgeCheck{asked: &asked}}
	res := f.mustInvoke(t, b, "Who do I write to?")
	want := []turn.Violation{
		{GuardrailID: "acme.no-pii", Kind: "pattern", Action: bindings.ActionLog, Reason: "the response contains an email address"},
		{GuardrailID: "acme.polite", Kind: bindings.KindLLMJudge, Action: "escalate", Reason: "judge said no"},
	}
	if diff := cmp.Diff(want, res.Violations); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
	if asked != 1 || res.Response.MessageID == "" {
		t.Errorf("judge asked %d times, response %+v", asked, res.Response)
	}
	var violated int
	for _, k := range f.events.kinds() {
		if k == turn.KindGuardrailViolated {
			violated++
		}
	}
	if violated != 2 {
		t.Errorf("%d guardrail.violated events, want 2", violated)
	}
	if len(res.Provenance.Guardrails) != 2 || res.Usage.InputTokens < 5 {
		t.Errorf("provenance guardrails %+v, usage %+v", res.Provenance.Guardrails, res.Usage)
	}
}

func TestSemanticRetrieval(t *testing.T) {
	f := newFixture(t, []scripted.Response{scripted.Say("ok")}, func(s *agent.Spec) {
		s.Retrieval[0].Mode = agent.ModeSemantic
	})
	emb := memstore.HashEmbeddings{}
	ctx := t.Context()
	vs, _ := emb.Embed(ctx, "m", []string{"Mutual confidentiality clause: three years after disclosure."})
	if _, err := f.store.PutFact(ctx, bindings.Fact{TenantID: tenant, ProjectID: project, ID: "C-7", Type: "acme.clause",
		Text: "Mutual confidentiality clause: three years after disclosure.", Embedding: vs[0]}); err != nil {
		t.Fatal(err)
	}
	b := f.bindings()
	if _, err := turn.Invoke(ctx, f.input("confidentiality clause"), b); agents.CodeOf(err) != agents.CodeModelInvocationFailed {
		t.Fatalf("semantic retrieval without embeddings = %v, want model-invocation-failed", err)
	}
	f2 := newFixture(t, []scripted.Response{scripted.Say("ok")}, func(s *agent.Spec) { s.Retrieval[0].Mode = agent.ModeSemantic })
	if _, err := f2.store.PutFact(ctx, bindings.Fact{TenantID: tenant, ProjectID: project, ID: "C-7", Type: "acme.clause",
		Text: "Mutual confidentiality clause: three years after disclosure.", Embedding: vs[0]}); err != nil {
		t.Fatal(err)
	}
	b2 := f2.bindings()
	b2.Embeddings, b2.EmbeddingModel = emb, "hash"
	res, err := turn.Invoke(ctx, f2.input("confidentiality clause"), b2)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Retrieved) == 0 || res.Retrieved[0].Fact.ID != "C-7" || res.Retrieved[0].Fact.Embedding != nil {
		t.Errorf("retrieved = %+v", res.Retrieved)
	}
}

// TestBudgetsAcrossAPark: the cost budget sums usage from before and after
// the park; wall time spent parked does not count.
func TestBudgetsAcrossAPark(t *testing.T) {
	t.Run("cost counts across", func(t *testing.T) {
		f := newFixture(t, emailThenAnswer(), func(s *agent.Spec) { c := 0.0025; s.Budget.MaxCostUsd = &c })
		res := f.park(t, f.bindings(), "Send.")
		f.decide(res.Approvals, true)
		_, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, f.bindings())
		var be *agents.BudgetExceededError
		if !errors.As(err, &be) || be.Kind != agents.BudgetCost || be.Used < 0.0029 {
			t.Errorf("Resume = %v, want cost budget exceeded with 0.003 used", err)
		}
	})
	t.Run("parked time is free", func(t *testing.T) {
		f := newFixture(t, emailThenAnswer(), nil) // maxWallMs 60 000
		res := f.park(t, f.bindings(), "Send.")
		f.clock.Advance(3 * time.Hour) // the reviewer takes their time
		f.decide(res.Approvals, true)
		final, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, f.bindings())
		if err != nil || final.Status != turn.StatusCompleted {
			t.Errorf("Resume after a long park = %+v, %v", final, err)
		}
	})
	t.Run("running time adds up", func(t *testing.T) {
		f := newFixture(t, emailThenAnswer(), nil)
		f.addTool("acme.clause-search", "1.9.0", clauseSchema, func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
			return json.RawMessage(`{}`), nil
		})
		// The model call before the park takes 40 s, the one after 30 s.
		slow := &slowProvider{Provider: f.provider, clock: f.clock, each: 40 * time.Second}
		b := f.bindings()
		b.Providers = bindings.Providers{slow}
		res := f.park(t, b, "Send.")
		f.clock.Advance(time.Hour)
		f.decide(res.Approvals, true)
		slow.each = 30 * time.Second
		_, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, b)
		var ta *agents.TurnAbortedError
		if !errors.As(err, &ta) || ta.Reason != agents.AbortTimeout {
			t.Errorf("Resume = %v, want turn-aborted timeout after 70 s of running", err)
		}
	})
}

// slowProvider advances the clock by each on every call.
type slowProvider struct {
	bindings.Provider
	clock *clock
	each  time.Duration
}

func (s *slowProvider) Generate(ctx context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	s.clock.Advance(s.each)
	return s.Provider.Generate(ctx, req)
}

// TestToolConfigTypesAreStable: a tool's config reaches it with the same
// Go types before and after a park (the journaled JSON form).
func TestToolConfigTypesAreStable(t *testing.T) {
	f := newFixture(t, []scripted.Response{
		scripted.Call("c1", "acme.clause-search", map[string]any{"query": "a"}),
		emailThenAnswer()[0],
		scripted.Call("c3", "acme.clause-search", map[string]any{"query": "b"}),
		scripted.Say("done"),
	}, nil)
	var types []string
	if err := f.tools.Add(tenant, bindings.ToolDescriptor{ID: "acme.clause-search", Version: "1.5.0", InputSchema: clauseSchema, Config: map[string]any{"max": 3}},
		func(_ context.Context, _ json.RawMessage, call bindings.CallContext) (json.RawMessage, error) {
			types = append(types, fmt.Sprintf("%T", call.Config["max"]))
			return json.RawMessage(`{}`), nil
		}); err != nil {
		t.Fatal(err)
	}
	res := f.park(t, f.bindings(), "Go.")
	f.decide(res.Approvals, true)
	if _, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, f.bindings()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"float64", "float64"}, types); diff != "" {
		t.Errorf("config value types before and after the park (-want +got):\n%s", diff)
	}
}

// TestWallDeadlineCancelsASlowStep: maxWallMs is also a deadline on the
// context a step runs under.
func TestWallDeadlineCancelsASlowStep(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), func(s *agent.Spec) { w := int64(50); s.Budget.MaxWallMs = &w })
	f.addTool("acme.clause-search", "1.8.0", clauseSchema, func(ctx context.Context, _ json.RawMessage, _ bindings.CallContext) (json.RawMessage, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Second):
			return json.RawMessage(`{}`), nil
		}
	})
	start := time.Now()
	_, err := turn.Invoke(t.Context(), f.input("Find."), f.bindings())
	var ta *agents.TurnAbortedError
	if !errors.As(err, &ta) || ta.Reason != agents.AbortTimeout {
		t.Fatalf("Invoke = %v, want turn-aborted timeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the turn took %v to stop", d)
	}
}

// TestWallDeadlineIsTheStepContextsDeadline: a step under maxWallMs sees
// the budget as its context's deadline, and once it passed the context's
// error is context.DeadlineExceeded (as with context.WithTimeout), so a
// tool's client reports a deadline rather than a cancellation.
func TestWallDeadlineIsTheStepContextsDeadline(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), func(s *agent.Spec) { w := int64(50); s.Budget.MaxWallMs = &w })
	var deadline time.Duration
	var hasDeadline bool
	var stepErr error
	f.addTool("acme.clause-search", "1.8.0", clauseSchema, func(ctx context.Context, _ json.RawMessage, _ bindings.CallContext) (json.RawMessage, error) {
		d, ok := ctx.Deadline()
		deadline, hasDeadline = time.Until(d), ok
		<-ctx.Done()
		stepErr = ctx.Err()
		return nil, ctx.Err()
	})
	_, err := turn.Invoke(t.Context(), f.input("Find."), f.bindings())
	var ta *agents.TurnAbortedError
	if !errors.As(err, &ta) || ta.Reason != agents.AbortTimeout {
		t.Fatalf("Invoke = %v, want turn-aborted timeout", err)
	}
	if !hasDeadline || deadline > 50*time.Millisecond {
		t.Errorf("the step's deadline = %v (set: %v), want within the 50 ms budget", deadline, hasDeadline)
	}
	if !errors.Is(stepErr, context.DeadlineExceeded) {
		t.Errorf("the step's context error = %v, want context.DeadlineExceeded", stepErr)
	}
}
