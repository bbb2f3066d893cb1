package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/pack"
	"github.com/kindgi/agents/turn"
)

// GradeInput is one answer to grade: the case, the answer's text and
// structured output, the tool calls that produced it, and what it ran on.
type GradeInput struct {
	Case     Case
	TenantID string
	// Agent is the version under evaluation (Options.Agent), also when the
	// baseline's answer is graded.
	Agent agent.Agent
	// Baseline is true when the answer graded is the recorded run's.
	Baseline  bool
	Answer    string
	Output    json.RawMessage
	ToolCalls []RecordedCall
	// Bindings are Options.Bindings, for graders that read the tenant's
	// guardrails or call a model; a grader never writes through them.
	Bindings turn.Bindings
}

// Grade is one grader's verdict. Score is in [0, 1] (1 or 0 for a grader
// that only passes or fails).
type Grade struct {
	Name   string  `json:"name"`
	Pass   bool    `json:"pass"`
	Score  float64 `json:"score"`
	Reason string  `json:"reason,omitempty"`
}

// Grader grades an answer. An error means the grader could not decide; Run
// records it as a failed grade whose reason is the error, and goes on.
type Grader interface {
	Grade(ctx context.Context, in GradeInput) (Grade, error)
}

// GraderFunc adapts a function to Grader.
type GraderFunc func(ctx context.Context, in GradeInput) (Grade, error)

// Grade calls f.
func (f GraderFunc) Grade(ctx context.Context, in GradeInput) (Grade, error) { return f(ctx, in) }

// verdict is the Grade of a grader that only passes or fails.
func verdict(name string, pass bool, reason string) Grade {
	g := Grade{Name: name, Pass: pass, Reason: reason}
	if pass {
		g.Score = 1
	}
	return g
}

// Contains passes an answer that contains s.
func Contains(s string) Grader {
	name := "contains " + strconv.Quote(s)
	return GraderFunc(func(_ context.Context, in GradeInput) (Grade, error) {
		if strings.Contains(in.Answer, s) {
			return verdict(name, true, ""), nil
		}
		return verdict(name, false, "the answer does not contain "+strconv.Quote(s)), nil
	})
}

// Matches passes an answer that the regular expression pattern (RE2
// syntax) matches. A pattern that does not compile fails every grade with
// the compiler's reason.
func Matches(pattern string) Grader {
	name := "matches /" + pattern + "/"
	re, cerr := regexp.Compile(pattern)
	return GraderFunc(func(_ context.Context, in GradeInput) (Grade, error) {
		if cerr != nil {
			return Grade{}, &agents.InvalidMessageError{Reason: "eval.Matches: " + cerr.Error()}
		}
		if re.MatchString(in.Answer) {
			return verdict(name, true, ""), nil
		}
		return verdict(name, false, "the answer does not match /"+pattern+"/"), nil
	})
}

// OutputSchema passes an answer whose structured output — or, for an
// agent without an output schema, whose text read as JSON — is valid
// against the JSON Schema schema (draft 2020-12). The reason of a failed
// grade lists the schema's issues.
func OutputSchema(schema json.RawMessage) Grader {
	const name = "output-schema"
	sch, cerr := pack.CompileSchema(schema)
	return GraderFunc(func(_ context.Context, in GradeInput) (Grade, error) {
		if cerr != nil {
			return Grade{}, &agents.InvalidMessageError{Reason: "eval.OutputSchema: the schema does not compile: " + cerr.Error()}
		}
		doc := in.Output
		if len(doc) == 0 {
			doc = json.RawMessage(strings.TrimSpace(in.Answer))
		}
		if !json.Valid(doc) {
			return verdict(name, false, "the answer is not JSON"), nil
		}
		issues := sch.Validate(doc)
		if len(issues) == 0 {
			return verdict(name, true, ""), nil
		}
		msgs := make([]string, len(issues))
		for i, is := range issues {
			msgs[i] = "at \"" + is.InstancePath + "\": " + is.Message
		}
		return verdict(name, false, strings.Join(msgs, "; ")), nil
	})
}

// Guardrails passes an answer that every one of the tenant's guardrails
// ids passes — the agent's own guardrails when ids is empty — checked as
// the turn checks them (turn.ResolveGuardrails and turn.EvaluateGate over
// Bindings.Guardrails, Checks and, for llm-judge guardrails, Providers
// under the tenant policy). The reason names each failed guardrail.
func Guardrails(ids ...string) Grader {
	return GraderFunc(func(ctx context.Context, in GradeInput) (Grade, error) {
		const name = "guardrails"
		want := ids
		if len(want) == 0 {
			want = in.Agent.Guardrails
		}
		gb := turn.GuardrailsBindings{Guardrails: in.Bindings.Guardrails, Checks: in.Bindings.Checks, Providers: in.Bindings.Providers}
		gs, err := turn.ResolveGuardrails(ctx, in.TenantID, want, gb)
		if err != nil {
			return Grade{}, err
		}
		trace := turn.BuildRunTrace(turn.RunTraceInput{
			RunID: in.Case.FromRunID, TenantID: in.TenantID, AgentID: in.Agent.ID, AgentVersion: in.Agent.Version,
			Messages:  []bindings.ChatMessage{{Role: bindings.ChatUser, Content: in.Case.UserMessage}, {Role: bindings.ChatAssistant, Content: in.Answer}},
			ToolCalls: traceCalls(in.ToolCalls), Response: in.Answer,
		})
		outs, err := turn.EvaluateGate(ctx, turn.GateInput{Guardrails: gs, Trace: trace, Policy: turn.MergePolicies(in.Bindings.TenantPolicy)}, gb)
		if err != nil {
			return Grade{}, err
		}
		var failed []string
		for _, o := range outs {
			if !o.Passed {
				failed = append(failed, o.ID+": "+o.Reason)
			}
		}
		g := verdict(name, len(failed) == 0, strings.Join(failed, "; "))
		if len(outs) > 0 {
			g.Score = float64(len(outs)-len(failed)) / float64(len(outs))
		}
		return g, nil
	})
}

func traceCalls(calls []RecordedCall) []bindings.TraceToolCall {
	out := make([]bindings.TraceToolCall, len(calls))
	for i, c := range calls {
		out[i] = bindings.TraceToolCall{ID: strconv.Itoa(i + 1), ToolID: c.ToolID, ToolVersion: c.ToolVersion, Input: c.Arguments, Output: c.Output, Error: c.Error}
	}
	return out
}

// judgeSystem is the judge's instruction: the verdict as one JSON object.
const judgeSystem = `You grade an AI agent's answer against a rubric. ` +
	`Reply with one JSON object and nothing else: {"pass": true or false, "score": a number from 0 to 1, "reason": "one sentence"}.`

// Judge asks model of provider p to grade the answer against rubric (an
// LLM judge): the request holds the rubric, the user message and the
// answer, and the reply must be one JSON object {"pass", "score",
// "reason"} (a code fence around it is allowed). A reply that is not such
// an object, or a failed call, is a grader error. A missing score is 1
// for a pass and 0 for a fail.
func Judge(p bindings.Provider, model, rubric string) Grader {
	return GraderFunc(func(ctx context.Context, in GradeInput) (Grade, error) {
		const name = "judge"
		if p == nil {
			return Grade{}, &agents.InvalidBindingsError{Reason: "eval.Judge needs a provider"}
		}
		who := "new"
		if in.Baseline {
			who = "baseline"
		}
		resp, err := p.Generate(ctx, bindings.GenerateRequest{
			Model: model, TenantID: in.TenantID, RequestID: "eval/" + in.Case.ID + "/judge/" + who,
			Messages: []bindings.ChatMessage{
				{Role: bindings.ChatSystem, Content: judgeSystem},
				{Role: bindings.ChatUser, Content: "Rubric:\n" + rubric + "\n\nUser message:\n" + in.Case.UserMessage + "\n\nAnswer:\n" + in.Answer},
			},
		})
		if err != nil {
			return Grade{}, err
		}
		var v struct {
			Pass   *bool    `json:"pass"`
			Score  *float64 `json:"score"`
			Reason string   `json:"reason"`
		}
		body := jsonObject(resp.Text)
		if err := json.Unmarshal(body, &v); err != nil || v.Pass == nil {
			if err == nil {
				err = errors.New(`no "pass" field`)
			}
			return Grade{}, &agents.ModelInvocationError{Provider: p.ID(), Model: model, Message: fmt.Sprintf("the judge's verdict is not JSON {pass, score, reason}: %v: %q", err, resp.Text)}
		}
		g := verdict(name, *v.Pass, v.Reason)
		if v.Score != nil {
			g.Score = min(max(*v.Score, 0), 1)
		}
		return g, nil
	})
}

// jsonObject returns the JSON object of a model's reply: the text from
// its first '{' to its last '}' (dropping a code fence or words around it).
func jsonObject(text string) []byte {
	b := []byte(text)
	i, j := bytes.IndexByte(b, '{'), bytes.LastIndexByte(b, '}')
	if i < 0 || j < i {
		return b
	}
	return b[i : j+1]
}
