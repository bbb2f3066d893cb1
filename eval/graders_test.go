package eval_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/eval"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
)

func gradeOf(t *testing.T, g eval.Grader, in eval.GradeInput) (eval.Grade, error) {
	t.Helper()
	return g.Grade(t.Context(), in)
}

func TestContainsAndMatches(t *testing.T) {
	for _, tc := range []struct {
		g      eval.Grader
		answer string
		want   eval.Grade
	}{
		{eval.Contains("refund"), "a refund is due", eval.Grade{Name: `contains "refund"`, Pass: true, Score: 1}},
		{eval.Contains("refund"), "no money back", eval.Grade{Name: `contains "refund"`, Reason: `the answer does not contain "refund"`}},
		{eval.Matches(`^\d{3}-\d{4}$`), "555-1234", eval.Grade{Name: `matches /^\d{3}-\d{4}$/`, Pass: true, Score: 1}},
		{eval.Matches(`^\d{3}-\d{4}$`), "call 555-1234", eval.Grade{Name: `matches /^\d{3}-\d{4}$/`, Reason: `the answer does not match /^\d{3}-\d{4}$/`}},
	} {
		got, err := gradeOf(t, tc.g, eval.GradeInput{Answer: tc.answer})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.answer, diff)
		}
	}
}

func TestOutputSchema(t *testing.T) {
	g := eval.OutputSchema(json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`))
	for _, tc := range []struct {
		name   string
		in     eval.GradeInput
		pass   bool
		reason string
	}{
		{"structured output", eval.GradeInput{Answer: "ignored", Output: json.RawMessage(`{"amount":3}`)}, true, ""},
		{"text as JSON", eval.GradeInput{Answer: ` {"amount": 4} `}, true, ""},
		{"missing field", eval.GradeInput{Output: json.RawMessage(`{"total":3}`)}, false, "amount"},
		{"not JSON", eval.GradeInput{Answer: "three dollars"}, false, "the answer is not JSON"},
	} {
		got, err := gradeOf(t, g, tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if got.Pass != tc.pass || !strings.Contains(got.Reason, tc.reason) || got.Name != "output-schema" {
			t.Errorf("%s: %+v", tc.name, got)
		}
	}
	if _, err := gradeOf(t, eval.OutputSchema(json.RawMessage(`{"type":`)), eval.GradeInput{Answer: "{}"}); agents.CodeOf(err) != agents.CodeInvalidMessage {
		t.Errorf("a schema that does not compile: err = %v", err)
	}
}

// TestGuardrails: the tenant's guardrails, resolved and checked as the
// turn checks them, grade the answer.
func TestGuardrails(t *testing.T) {
	noSSN := bindings.CheckFunc(func(_ context.Context, cfg json.RawMessage, tr bindings.RunTrace) (bindings.CheckResult, error) {
		if strings.Contains(tr.Response.Content, "123-45-6789") {
			return bindings.CheckResult{Passed: false, Reason: "the answer holds an SSN"}, nil
		}
		return bindings.CheckResult{Passed: true}, nil
	})
	b := eval.GradeInput{TenantID: tenant, Agent: agent.Agent{ID: "a", Version: "1.0.0", Guardrails: []string{"no-ssn"}}}
	b.Bindings.Guardrails = memstore.Guardrails{Shared: map[string]bindings.Guardrail{"no-ssn": {ID: "no-ssn", Kind: "pattern", CheckID: "ssn", Action: "halt"}}}
	b.Bindings.Checks = memstore.Checks{"ssn": noSSN}
	b.Answer = "Your SSN is 123-45-6789."
	got, err := gradeOf(t, eval.Guardrails(), b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(eval.Grade{Name: "guardrails", Reason: "no-ssn: the answer holds an SSN"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	b.Answer = "I cannot share that."
	if got, err := gradeOf(t, eval.Guardrails(), b); err != nil || !got.Pass || got.Score != 1 {
		t.Errorf("clean answer: %+v, %v", got, err)
	}
	if _, err := gradeOf(t, eval.Guardrails("unknown"), b); agents.CodeOf(err) != agents.CodeUnresolvedGuardrail {
		t.Errorf("unknown guardrail: err = %v", err)
	}
}

// TestJudge: the judge's JSON verdict is the grade; a reply that is not
// one is a grader error.
func TestJudge(t *testing.T) {
	p := scripted.New([]scripted.Response{
		scripted.Say("```json\n{\"pass\": false, \"score\": 0.25, \"reason\": \"rude\"}\n```"),
		scripted.Say(`{"pass": true}`),
		scripted.Say("looks fine to me"),
	}, nil)
	g := eval.Judge(p, scripted.DefaultModel, "The answer is polite.")
	in := eval.GradeInput{TenantID: tenant, Case: eval.Case{ID: "c1", UserMessage: "Refund?"}, Answer: "No."}
	got, err := gradeOf(t, g, in)
	if err != nil || got != (eval.Grade{Name: "judge", Score: 0.25, Reason: "rude"}) {
		t.Errorf("first verdict: %+v, %v", got, err)
	}
	if got, err := gradeOf(t, g, in); err != nil || got != (eval.Grade{Name: "judge", Pass: true, Score: 1}) {
		t.Errorf("second verdict: %+v, %v", got, err)
	}
	if _, err := gradeOf(t, g, in); agents.CodeOf(err) != agents.CodeModelInvocationFailed || !strings.Contains(err.Error(), "looks fine to me") {
		t.Errorf("a reply that is not JSON: err = %v", err)
	}
	req := p.Requests()[0]
	if req.RequestID != "eval/c1/judge/new" || !strings.Contains(req.Messages[1].Content, "The answer is polite.") || !strings.Contains(req.Messages[1].Content, "Answer:\nNo.") {
		t.Errorf("judge request = %+v", req)
	}
}
