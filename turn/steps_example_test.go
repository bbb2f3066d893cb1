package turn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// The steps of a turn, each used on its own, without a turn.

func ExampleRunRetrievals() {
	ctx := context.Background()
	store := memstore.New(nil)
	for id, text := range map[string]string{
		"C-7":  "Mutual confidentiality: three years after disclosure.",
		"C-12": "Non-solicitation of employees for twelve months.",
	} {
		_, _ = store.PutFact(ctx, bindings.Fact{TenantID: "acme", ProjectID: "globex", ID: id, Type: "acme.clause", Text: text})
	}
	limit := 1
	facts, err := turn.RunRetrievals(ctx, turn.RetrievalRequest{
		TenantID: "acme", ProjectID: "globex", Query: "confidentiality",
		Intents: []agent.RetrievalIntent{{Types: []string{"acme.clause"}, Scope: agent.ScopeSameProject, Mode: agent.ModeKeyword, Limit: &limit}},
	}, turn.RetrievalBindings{Memory: store})
	if err != nil {
		panic(err)
	}
	for _, f := range facts {
		fmt.Println(f.Fact.ID, f.Intent.Mode)
	}
	// Output: C-7 keyword
}

func ExampleFormatRetrievedForPrompt() {
	fmt.Print(turn.FormatRetrievedForPrompt([]turn.RetrievedFact{
		{Fact: bindings.Fact{ID: "C-7", Type: "acme.clause", Text: "Mutual confidentiality:\nthree years."}},
	}))
	// Output:
	// ## Retrieved facts
	// Facts from memory that may help; cite a fact by its id.
	// - [C-7] (acme.clause) Mutual confidentiality: three years.
}

// noEmail is a check that fails a response holding an email address.
var noEmail = bindings.CheckFunc(func(_ context.Context, _ json.RawMessage, trace bindings.RunTrace) (bindings.CheckResult, error) {
	if strings.Contains(trace.Response.Content, "@") {
		return bindings.CheckResult{Passed: false, Reason: "the response holds an email address"}, nil
	}
	return bindings.CheckResult{Passed: true}, nil
})

// politeJudge is an llm-judge check: it asks the model it is given.
type politeJudge struct{}

func (politeJudge) Evaluate(context.Context, json.RawMessage, bindings.RunTrace) (bindings.CheckResult, error) {
	return bindings.CheckResult{}, fmt.Errorf("needs a judge")
}

func (politeJudge) EvaluateWithJudge(ctx context.Context, _ json.RawMessage, trace bindings.RunTrace, j bindings.Judge) (bindings.CheckResult, error) {
	resp, err := j.Judge(ctx, []bindings.ChatMessage{{Role: bindings.ChatUser, Content: "Polite? " + trace.Response.Content}})
	if err != nil {
		return bindings.CheckResult{}, err
	}
	return bindings.CheckResult{Passed: resp.Text == "yes", Reason: "the judge said " + resp.Text, JudgeResponse: resp.Text}, nil
}

func guardrailsExample() turn.GuardrailsBindings {
	// Two providers; the tenant policy below allows only "judges".
	cheap := scripted.New(nil, &scripted.Options{ID: "cheap"})
	judges := scripted.New([]scripted.Response{scripted.Say("yes")}, &scripted.Options{ID: "judges"})
	return turn.GuardrailsBindings{
		Guardrails: memstore.Guardrails{Shared: map[string]bindings.Guardrail{
			"acme.no-pii": {ID: "acme.no-pii", Kind: "pattern", CheckID: "no-email", Action: bindings.ActionHalt},
			"acme.polite": {ID: "acme.polite", Kind: bindings.KindLLMJudge, CheckID: "polite", Action: bindings.ActionLog},
		}},
		Checks:    memstore.Checks{"no-email": noEmail, "polite": politeJudge{}},
		Providers: bindings.Providers{cheap, judges},
	}
}

func ExampleResolveGuardrails() {
	gs, err := turn.ResolveGuardrails(context.Background(), "acme", []string{"acme.no-pii", "acme.polite"}, guardrailsExample())
	if err != nil {
		panic(err)
	}
	for _, g := range gs {
		fmt.Println(g.ID, g.Kind, g.Action)
	}
	_, err = turn.ResolveGuardrails(context.Background(), "acme", []string{"acme.unknown"}, guardrailsExample())
	fmt.Println(err)
	// Output:
	// acme.no-pii pattern halt
	// acme.polite llm-judge log-only
	// guardrail "acme.unknown" could not be resolved: no such guardrail for the tenant
}

func ExampleBuildRunTrace() {
	trace := turn.BuildRunTrace(turn.RunTraceInput{
		RunID: "run-1", TenantID: "acme", AgentID: "acme.drafter", AgentVersion: "1.0.0",
		Messages: []bindings.ChatMessage{{Role: bindings.ChatSystem, Content: "You draft."}, {Role: bindings.ChatUser, Content: "Draft an NDA."}},
		Response: "Here is an NDA.",
	})
	fmt.Println(len(trace.Messages), trace.Messages[1].Role, trace.Response.Content)
	// Output: 2 user Here is an NDA.
}

func ExampleEvaluateGate() {
	ctx := context.Background()
	b := guardrailsExample()
	gs, _ := turn.ResolveGuardrails(ctx, "acme", []string{"acme.no-pii", "acme.polite"}, b)
	outs, err := turn.EvaluateGate(ctx, turn.GateInput{
		Guardrails: gs,
		Trace:      turn.BuildRunTrace(turn.RunTraceInput{RunID: "run-1", TenantID: "acme", Response: "Write to jane@globex.test."}),
		// The llm-judge check may only ask a provider the tenant allows:
		// it is routed to "judges", not to the first provider.
		Policy: turn.MergePolicies(&bindings.TenantPolicy{AllowProviders: []string{"judges"}}),
		Now:    func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) },
	}, b)
	if err != nil {
		panic(err)
	}
	for _, o := range outs {
		fmt.Println(o.ID, o.Passed, o.Reason, o.EvaluatedAt.Format(time.Kitchen))
	}
	// Output:
	// acme.no-pii false the response holds an email address 9:00AM
	// acme.polite true the judge said yes 9:00AM
}

func ExampleCategorizeOutcomes() {
	c := turn.CategorizeOutcomes([]turn.GuardrailOutcome{
		{ID: "acme.no-pii", Kind: "pattern", Action: bindings.ActionHalt, Passed: false, Reason: "email address"},
		{ID: "acme.tone", Kind: "pattern", Action: bindings.ActionLog, Passed: false, Reason: "curt"},
		{ID: "acme.polite", Kind: bindings.KindLLMJudge, Action: bindings.ActionLog, Passed: true},
	})
	fmt.Println(len(c.Passed), "passed;", len(c.Violations), "violation:", c.Violations[0].GuardrailID, "; halted:", c.Halted[0].ID)
	fmt.Println(c.Err())
	// Output:
	// 1 passed; 1 violation: acme.tone ; halted: acme.no-pii
	// guardrail "acme.no-pii" violated: email address
}

func ExampleEvaluateSessionGate() {
	three := 3
	p := turn.ResolveEffectiveHitlPolicy(nil, agent.Agent{ConversationPolicy: &agent.ConversationPolicy{HitlAfterTurns: &three}})
	for _, n := range []int{3, 4, 5} {
		g := turn.EvaluateSessionGate(p, n)
		fmt.Println(n, g.Required)
	}
	// Output:
	// 3 false
	// 4 true
	// 5 true
}

func ExamplePersistProvenance() {
	ctx := context.Background()
	store := memstore.New(nil)
	keys := memstore.NewKeys([]byte("a seed of at least thirty-two bytes!"))
	var published []string
	rec, err := turn.PersistProvenance(ctx, turn.ProvenanceSource{
		TenantID: "acme", RunID: "run-1", ConversationID: "conv-1", TurnNumber: 1, ParticipantID: "user-7",
		AgentID: "acme.drafter", AgentVersion: "1.0.0", Route: turn.ProviderRef{Provider: "scripted", Model: "scripted-1"},
		Prompt:    "You draft.",
		Messages:  []bindings.ChatMessage{{Role: bindings.ChatUser, Content: "Draft an NDA."}},
		CreatedAt: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
	}, turn.ProvenanceBindings{
		EmitBinding: store,
		Keys:        keys,
		Emit: func(_ context.Context, rec bindings.ProvenanceRecord) error {
			published = append(published, rec.RunID)
			return nil
		},
	})
	if err != nil {
		panic(err)
	}
	stored, _ := store.Provenance("acme", "run-1")
	fmt.Println(rec.ParticipantID, len(rec.MessageHashes), published, stored.KeyID == rec.KeyID)
	fmt.Println(turn.VerifyProvenance(ctx, stored, keys))
	// Output:
	// user-7 1 [run-1] true
	// <nil>
}
