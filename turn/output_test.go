package turn_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn"
)

var summarySchema = json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"},"clauses":{"type":"array","items":{"type":"string"}}},"required":["title","clauses"],"additionalProperties":false}`)

// answerBody is a text answer on the wire of api, streamed or not, shaped
// as the providers' fixtures.
func answerBody(api string, stream bool, text string) []byte {
	q, _ := json.Marshal(text)
	switch {
	case api == "openai" && !stream:
		return []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1745923202,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":` + string(q) + `,"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":12,"total_tokens":62}}`)
	case api == "openai":
		half := len(text) / 2
		a, _ := json.Marshal(text[:half])
		b, _ := json.Marshal(text[half:])
		chunk := func(delta, finish string) string {
			return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1745923202,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + finish + `}],"usage":null}` + "\n\n"
		}
		return []byte(chunk(`{"role":"assistant","content":"","refusal":null}`, "null") + chunk(`{"content":`+string(a)+`}`, "null") +
			chunk(`{"content":`+string(b)+`}`, "null") + chunk(`{}`, `"stop"`) +
			`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1745923202,"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":12,"total_tokens":62}}` + "\n\n" +
			"data: [DONE]\n\n")
	case !stream:
		return []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":` + string(q) + `}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":50,"output_tokens":12}}`)
	default:
		half := len(text) / 2
		a, _ := json.Marshal(text[:half])
		b, _ := json.Marshal(text[half:])
		ev := func(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }
		return []byte(ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":50,"output_tokens":1}}}`) +
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(a)+`}}`) +
			ev("ping", `{"type": "ping"}`) +
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(b)+`}}`) +
			ev("content_block_stop", `{"type":"content_block_stop","index":0}`) +
			ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":12}}`) +
			ev("message_stop", `{"type":"message_stop"}`))
	}
}

// outputTurn runs a turn of an agent with summarySchema as its output over
// api, the model answering answers[n-1] to its n-th call.
func outputTurn(t *testing.T, api string, stream bool, answers []string, edit func(*agent.Spec)) (*fixture, *wireAPI, turn.Result, error) {
	t.Helper()
	wa := &wireAPI{t: t, api: api}
	wa.hook = func(n int, _ map[string]any, w http.ResponseWriter, _ *http.Request) bool {
		if n > len(answers) {
			w.WriteHeader(http.StatusBadRequest)
			return true
		}
		serveBody(w, stream, answerBody(api, stream, answers[n-1]))
		return true
	}
	f := newFixture(t, nil, func(s *agent.Spec) {
		s.Output = summarySchema
		if edit != nil {
			edit(s)
		}
	})
	b := f.bindings()
	var p bindings.Provider = newWireProvider(t, wa)
	if !stream {
		p = plain{p}
	}
	b.Providers = bindings.Providers{p}
	in := f.input("Summarize the NDA.")
	in.RunID = "run-output"
	res, err := turn.Invoke(t.Context(), in, b)
	return f, wa, res, err
}

const (
	validSummary   = `{"title": "Mutual NDA", "clauses": ["C-7"]}`
	invalidSummary = `{"title": 7}`
)

func forEachProvider(t *testing.T, fn func(t *testing.T, api string, stream bool)) {
	for _, api := range []string{"openai", "anthropic"} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", api, stream), func(t *testing.T) { fn(t, api, stream) })
		}
	}
}

func TestStructuredOutputValid(t *testing.T) {
	forEachProvider(t, func(t *testing.T, api string, stream bool) {
		_, wa, res, err := outputTurn(t, api, stream, []string{validSummary}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Response.Output) != `{"title":"Mutual NDA","clauses":["C-7"]}` || res.Response.Content != validSummary {
			t.Errorf("output %s content %q", res.Response.Output, res.Response.Content)
		}
		req := wa.requests[0]
		var asked any
		if api == "openai" {
			rf, _ := req["response_format"].(map[string]any)
			js, _ := rf["json_schema"].(map[string]any)
			asked = js["schema"]
			if rf["type"] != "json_schema" || js["strict"] != true {
				t.Errorf("response_format %v", rf)
			}
		} else {
			oc, _ := req["output_config"].(map[string]any)
			format, _ := oc["format"].(map[string]any)
			asked = format["schema"]
			if format["type"] != "json_schema" {
				t.Errorf("output_config %v", oc)
			}
		}
		if raw, _ := json.Marshal(asked); string(raw) != `{"additionalProperties":false,"properties":{"clauses":{"items":{"type":"string"},"type":"array"},"title":{"type":"string"}},"required":["title","clauses"],"type":"object"}` {
			t.Errorf("the provider was not asked for the schema natively: %s", raw)
		}
	})
}

func TestStructuredOutputInvalidThenValid(t *testing.T) {
	forEachProvider(t, func(t *testing.T, api string, stream bool) {
		f, wa, res, err := outputTurn(t, api, stream, []string{invalidSummary, validSummary}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Response.Output) != `{"title":"Mutual NDA","clauses":["C-7"]}` || res.Usage.ModelCalls != 2 {
			t.Errorf("output %s, model calls %d", res.Response.Output, res.Usage.ModelCalls)
		}
		// The second call saw the invalid answer and what is wrong with it.
		second, _ := json.Marshal(wa.requests[1]["messages"])
		for _, want := range []string{`{\"title\": 7}`, "not valid against the required JSON Schema", "/title"} {
			if !strings.Contains(string(second), want) {
				t.Errorf("the second request lacks %q: %s", want, second)
			}
		}
		// Only the valid answer is stored in the conversation.
		ms := f.messages()
		if last := ms[len(ms)-1]; last.Content != validSummary || len(ms) != 2 {
			t.Errorf("messages %+v", ms)
		}
	})
}

func TestStructuredOutputTwiceInvalid(t *testing.T) {
	forEachProvider(t, func(t *testing.T, api string, stream bool) {
		f, _, _, err := outputTurn(t, api, stream, []string{invalidSummary, "not JSON at all"}, nil)
		var io *agents.InvalidOutputError
		if !errors.As(err, &io) || agents.CodeOf(err) != agents.CodeInvalidOutput || len(io.Issues) == 0 {
			t.Fatalf("err = %v, want *agents.InvalidOutputError", err)
		}
		// The outcome is final and replays as the same typed error.
		b := f.bindings()
		b.Providers = bindings.Providers{plain{newWireProvider(t, &wireAPI{t: t, api: api})}}
		in := f.input("Summarize the NDA.")
		in.RunID = "run-output"
		_, again := turn.Invoke(t.Context(), in, b)
		var io2 *agents.InvalidOutputError
		if !errors.As(again, &io2) || io2.Error() != io.Error() {
			t.Errorf("replayed %v, want %v", again, err)
		}
		if n := len(f.messages()); n != 1 {
			t.Errorf("%d messages: no answer may be stored", n)
		}
	})
}

func TestTheCorrectionCountsTowardsMaxSteps(t *testing.T) {
	one := 1
	_, wa, _, err := outputTurn(t, "openai", false, []string{invalidSummary, validSummary}, func(s *agent.Spec) {
		s.Budget.MaxSteps = &one
	})
	var be *agents.BudgetExceededError
	if !errors.As(err, &be) || be.Kind != agents.BudgetSteps {
		t.Fatalf("err = %v, want budget-exceeded steps", err)
	}
	if wa.count() != 1 {
		t.Errorf("%d model calls, want 1", wa.count())
	}
}
