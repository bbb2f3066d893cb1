package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/modelhttp/modelhttptest"
)

// fixture reads testdata; sse writes a stream fixture as the API does.
var (
	fixture = modelhttptest.Fixture
	sse     = modelhttptest.SSE
)

// newAPI is a fake Messages API answering with answer.
func newAPI(answer func(n int, w http.ResponseWriter, r *http.Request)) *modelhttptest.FakeAPI {
	return &modelhttptest.FakeAPI{Path: "/v1/messages", Answer: answer}
}

func newProvider(t *testing.T, h http.Handler) *Provider {
	t.Helper()
	return New(&Options{BaseURL: modelhttptest.Server(t, h), APIKey: "sk-ant-test", MinBackoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond})
}

var searchTool = modelhttptest.SearchTool

var ndaRequest = modelhttptest.DraftNDA("claude-sonnet-4-5")

func TestTextWithCacheUsage(t *testing.T) {
	modelhttptest.Both(t, func(t *testing.T, stream bool) {
		api := newAPI(func(_ int, w http.ResponseWriter, _ *http.Request) {
			if stream {
				sse(w, fixture(t, "stream_text.sse"))
				return
			}
			w.Write(fixture(t, "message_text.json"))
		})
		got, err := modelhttptest.Call(t.Context(), newProvider(t, api), stream, ndaRequest, nil)
		if err != nil {
			t.Fatal(err)
		}
		// 530 uncached + 100 written to the cache + 2000 read from it.
		cost := ((530+1.25*100+0.1*2000)*3.00 + 12*15.00) / 1e6
		want := bindings.GenerateResponse{
			Text: "Here is a mutual confidentiality clause for Acme LLP.", FinishReason: "stop",
			Model: "claude-sonnet-4-5-20250929",
			Usage: bindings.Usage{InputTokens: 2630, OutputTokens: 12, CostUsd: cost},
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
			t.Errorf("response (-want +got):\n%s", diff)
		}
		h, req := api.Headers[0], api.Requests[0]
		if h.Get("x-api-key") != "sk-ant-test" || h.Get("anthropic-version") != "2023-06-01" {
			t.Errorf("headers x-api-key %q anthropic-version %q", h.Get("x-api-key"), h.Get("anthropic-version"))
		}
		if req["system"] != "You draft clauses." || req["max_tokens"] != float64(DefaultMaxTokens) {
			t.Errorf("system %v max_tokens %v", req["system"], req["max_tokens"])
		}
		if s, present := req["stream"]; stream != (s == true) || (!stream && present) {
			t.Errorf("stream = %v (present %v)", s, present)
		}
		msgs := req["messages"].([]any)
		if len(msgs) != 1 || msgs[0].(map[string]any)["role"] != "user" {
			t.Errorf("messages = %v, want the user message alone (system is top-level)", msgs)
		}
		tool := req["tools"].([]any)[0].(map[string]any)
		if tool["name"] != "acme_clause-search" || tool["input_schema"].(map[string]any)["type"] != "object" {
			t.Errorf("tool = %v", tool)
		}
	})
}

func TestStreamAssemblesWhatGenerateReturns(t *testing.T) {
	for _, tc := range []struct{ sse, json string }{
		{"stream_text.sse", "message_text.json"},
		{"stream_tool_use.sse", "message_tool_use.json"},
	} {
		t.Run(tc.sse, func(t *testing.T) {
			sapi := newAPI(modelhttptest.Streamed(t, tc.sse))
			streamed, deltas, err := modelhttptest.Stream(t.Context(), newProvider(t, sapi), ndaRequest)
			if err != nil {
				t.Fatal(err)
			}
			gapi := newAPI(modelhttptest.Whole(t, tc.json))
			generated, err := newProvider(t, gapi).Generate(t.Context(), ndaRequest)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(generated, streamed); diff != "" {
				t.Errorf("streamed differs from generated (-generate +stream):\n%s", diff)
			}
			var text strings.Builder
			args := map[int]string{}
			for _, d := range deltas {
				text.WriteString(d.Text)
				args[d.ToolCallIndex] += d.ArgumentsDelta
			}
			if text.String() != streamed.Text {
				t.Errorf("text deltas give %q, response has %q", text.String(), streamed.Text)
			}
			for i, c := range streamed.ToolCalls {
				if got := compact(json.RawMessage(args[i])); string(got) != string(c.Arguments) {
					t.Errorf("call %d: deltas give %s, response has %s", i, args[i], c.Arguments)
				}
			}
		})
	}
}

func TestParallelToolUseSplitMidToken(t *testing.T) {
	api := newAPI(modelhttptest.Streamed(t, "stream_tool_use.sse"))
	got, deltas, err := modelhttptest.Stream(t.Context(), newProvider(t, api), ndaRequest)
	if err != nil {
		t.Fatal(err)
	}
	want := []bindings.ToolCall{
		{ID: "toolu_01A09q90qw90lq917835lq9", Name: "acme.clause-search", Arguments: json.RawMessage(`{"query":"confidentiality"}`)},
		{ID: "toolu_01B7Hcdfz3bTw9X2kq8mAa4", Name: "acme.clause-search", Arguments: json.RawMessage(`{"query":"term of agreement"}`)},
	}
	if diff := cmp.Diff(want, got.ToolCalls); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	if got.FinishReason != "tool_calls" || got.Text != "I'll search the clause library for both." {
		t.Errorf("finish %q text %q", got.FinishReason, got.Text)
	}
	wantDeltas := []bindings.Delta{
		{Text: "I'll search the clause"}, {Text: " library for both."},
		{ToolCallIndex: 0, ToolCallID: "toolu_01A09q90qw90lq917835lq9", ToolName: "acme.clause-search"},
		{ToolCallIndex: 0, ArgumentsDelta: `{"qu`}, {ToolCallIndex: 0, ArgumentsDelta: `ery": "confid`}, {ToolCallIndex: 0, ArgumentsDelta: `entiality"}`},
		{ToolCallIndex: 1, ToolCallID: "toolu_01B7Hcdfz3bTw9X2kq8mAa4", ToolName: "acme.clause-search"},
		{ToolCallIndex: 1, ArgumentsDelta: `{"query": "te`}, {ToolCallIndex: 1, ArgumentsDelta: `rm of agreement"}`},
	}
	if diff := cmp.Diff(wantDeltas, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
}

func TestStopReasons(t *testing.T) {
	modelhttptest.CheckFinishReasons(t, func(h http.Handler) bindings.StreamingProvider { return newProvider(t, h) }, ndaRequest,
		modelhttptest.FinishFixtures{Path: "/v1/messages", JSON: "message_text.json", SSE: "stream_text.sse", Field: "stop_reason", Value: "end_turn"},
		map[string]string{
			"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls",
			"refusal": "content_filter", "model_context_window_exceeded": "length", "pause_turn": "pause_turn",
		})
}

func TestStreamErrorMidStream(t *testing.T) {
	api := newAPI(modelhttptest.Streamed(t, "stream_error.sse"))
	_, deltas, err := modelhttptest.Stream(t.Context(), newProvider(t, api), ndaRequest)
	var mi *agents.ModelInvocationError
	if !errors.As(err, &mi) || mi.Message != "Overloaded" || mi.Provider != "anthropic" {
		t.Fatalf("err = %v, want the error event as *agents.ModelInvocationError", err)
	}
	if api.Count() != 1 || len(deltas) != 1 {
		t.Errorf("requests %d deltas %d: a stream that delivered must not be retried", api.Count(), len(deltas))
	}
}

func TestStreamCutBeforeAnyDeltaIsRetried(t *testing.T) {
	api := newAPI(func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			// message_start, then the connection drops.
			blocks := strings.SplitAfter(string(fixture(t, "stream_text.sse")), "\n\n")
			sse(w, []byte(blocks[0]))
			panic(http.ErrAbortHandler)
		}
		sse(w, fixture(t, "stream_text.sse"))
	})
	got, err := newProvider(t, api).GenerateStream(t.Context(), ndaRequest, nil)
	if err != nil {
		t.Fatal(err)
	}
	if api.Count() != 2 || got.Text == "" {
		t.Errorf("requests %d text %q", api.Count(), got.Text)
	}
}

func TestStreamCutMidStreamFails(t *testing.T) {
	api := newAPI(func(_ int, w http.ResponseWriter, _ *http.Request) {
		blocks := strings.SplitAfter(string(fixture(t, "stream_text.sse")), "\n\n")
		sse(w, []byte(strings.Join(blocks[:4], "")))
	})
	_, err := newProvider(t, api).GenerateStream(t.Context(), ndaRequest, func(bindings.Delta) {})
	if agents.CodeOf(err) != agents.CodeModelInvocationFailed || !strings.Contains(err.Error(), "message_stop") {
		t.Fatalf("err = %v", err)
	}
	if api.Count() != 1 {
		t.Errorf("requests = %d", api.Count())
	}
}

func TestRetries429And529ThenSucceeds(t *testing.T) {
	modelhttptest.Both(t, func(t *testing.T, stream bool) {
		api := newAPI(func(n int, w http.ResponseWriter, _ *http.Request) {
			switch n {
			case 1:
				w.Header().Set("retry-after", "0")
				w.WriteHeader(http.StatusTooManyRequests)
				w.Write(fixture(t, "error_429.json"))
			case 2:
				w.WriteHeader(529)
				w.Write(fixture(t, "error_529.json"))
			default:
				if stream {
					sse(w, fixture(t, "stream_text.sse"))
					return
				}
				w.Write(fixture(t, "message_text.json"))
			}
		})
		var retries []bindings.ModelRetry
		ctx := bindings.WithModelRetryReporter(t.Context(), func(_ context.Context, r bindings.ModelRetry) { retries = append(retries, r) })
		got, err := modelhttptest.Call(ctx, newProvider(t, api), stream, ndaRequest, nil)
		if err != nil {
			t.Fatal(err)
		}
		if api.Count() != 3 || got.Text == "" {
			t.Errorf("requests %d text %q", api.Count(), got.Text)
		}
		// Each retry is reported to the caller (the turn logs and emits it).
		if len(retries) != 2 || retries[0].Attempt != 1 || retries[0].Status != http.StatusTooManyRequests ||
			retries[1].Attempt != 2 || retries[1].Status != 529 {
			t.Errorf("retries reported = %+v, want attempt 1 (429) and attempt 2 (529)", retries)
		}
	})
}

func TestBadRequestIsNotRetried(t *testing.T) {
	api := newAPI(func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		w.Write(fixture(t, "error_400.json"))
	})
	_, err := newProvider(t, api).Generate(t.Context(), ndaRequest)
	var mi *agents.ModelInvocationError
	if !errors.As(err, &mi) || mi.Status != 400 || !strings.HasPrefix(mi.Message, "messages.1.content.0") {
		t.Fatalf("err = %v", err)
	}
	if api.Count() != 1 {
		t.Errorf("requests = %d", api.Count())
	}
}

func TestRequestMapping(t *testing.T) {
	temp, topP, maxTok, seed := 1.5, 0.9, 300, int64(7)
	schema := json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"],"additionalProperties":false}`)
	req := bindings.GenerateRequest{
		Model: "claude-sonnet-4-5",
		Messages: []bindings.ChatMessage{
			{Role: bindings.ChatSystem, Content: "You draft clauses."},
			{Role: bindings.ChatSystem, Content: "Relevant facts: none."},
			{Role: bindings.ChatUser, Content: "Draft an NDA."},
			{Role: bindings.ChatAssistant, Content: "Searching.", ToolCalls: []bindings.ToolCall{
				{ID: "call-1-1", Name: "acme.clause-search", Arguments: json.RawMessage(`{"query":"nda"}`)},
				{ID: "call.1.2", Name: "acme.clause-search", Arguments: json.RawMessage(`{"query":"term"}`)},
			}},
			{Role: bindings.ChatTool, ToolCallID: "call-1-1", Content: `{"clauses":["c1"]}`},
			{Role: bindings.ChatTool, ToolCallID: "call.1.2", Content: `{"clauses":["c2"]}`},
		},
		Tools:    []bindings.ToolDefinition{searchTool},
		Settings: bindings.ModelSettings{Temperature: &temp, TopP: &topP, MaxOutputTokens: &maxTok, Stop: []string{"END"}, Seed: &seed},
		Output:   schema,
	}
	api := newAPI(modelhttptest.Whole(t, "message_text.json"))
	if _, err := newProvider(t, api).Generate(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	got := api.Requests[0]
	var wantMsgs any
	json.Unmarshal([]byte(`[
		{"role":"user","content":[{"type":"text","text":"Draft an NDA."}]},
		{"role":"assistant","content":[
			{"type":"text","text":"Searching."},
			{"type":"tool_use","id":"call-1-1","name":"acme_clause-search","input":{"query":"nda"}},
			{"type":"tool_use","id":"call_1_2","name":"acme_clause-search","input":{"query":"term"}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"call-1-1","content":"{\"clauses\":[\"c1\"]}"},
			{"type":"tool_result","tool_use_id":"call_1_2","content":"{\"clauses\":[\"c2\"]}"}]}
	]`), &wantMsgs)
	if diff := cmp.Diff(wantMsgs, got["messages"]); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if got["system"] != "You draft clauses.\n\nRelevant facts: none." {
		t.Errorf("system = %q", got["system"])
	}
	if got["temperature"] != 1.0 || got["top_p"] != 0.9 || got["max_tokens"] != 300.0 {
		t.Errorf("temperature %v (want capped at 1) top_p %v max_tokens %v", got["temperature"], got["top_p"], got["max_tokens"])
	}
	if diff := cmp.Diff([]any{"END"}, got["stop_sequences"]); diff != "" {
		t.Errorf("stop_sequences: %s", diff)
	}
	if _, ok := got["seed"]; ok {
		t.Error("seed sent: the API has none")
	}
	var wantOutput any
	json.Unmarshal([]byte(`{"format":{"type":"json_schema","schema":`+string(schema)+`}}`), &wantOutput)
	if diff := cmp.Diff(wantOutput, got["output_config"]); diff != "" {
		t.Errorf("output_config (-want +got):\n%s", diff)
	}
}

func TestNoSettingsSendsOnlyTheBasics(t *testing.T) {
	api := newAPI(modelhttptest.Whole(t, "message_text.json"))
	if _, err := newProvider(t, api).Generate(t.Context(), modelhttptest.SayHi("m")); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range api.Requests[0] {
		keys = append(keys, k)
	}
	if diff := cmp.Diff([]string{"max_tokens", "messages", "model"}, keys, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("request keys (-want +got):\n%s", diff)
	}
}

func TestEnvironmentFillsEmptyOptions(t *testing.T) {
	api := newAPI(modelhttptest.Whole(t, "message_text.json"))
	t.Setenv("ANTHROPIC_BASE_URL", modelhttptest.Server(t, api)+"/v1/")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-env")
	p := New(nil)
	if _, err := p.Generate(t.Context(), ndaRequest); err != nil {
		t.Fatal(err)
	}
	if api.Headers[0].Get("x-api-key") != "sk-ant-env" {
		t.Errorf("x-api-key = %q", api.Headers[0].Get("x-api-key"))
	}
	if p.ID() != "anthropic" || len(p.Models()) != len(DefaultModels) {
		t.Errorf("id %q models %d", p.ID(), len(p.Models()))
	}
}

func TestOutputSchemaIsAdaptedForTheAPI(t *testing.T) {
	in := json.RawMessage(`{"type":"object","properties":{
		"title":{"type":"string","maxLength":80,"description":"The title."},
		"clauses":{"type":"array","minItems":2,"items":{"type":"object","properties":{"id":{"type":"string","pattern":"^C-"}}}},
		"n":{"type":"integer","minimum":1}},"required":["title"]}`)
	var got, want any
	json.Unmarshal(apiSchema(in), &got)
	json.Unmarshal([]byte(`{"type":"object","additionalProperties":false,"required":["title"],"properties":{
		"title":{"type":"string","description":"The title. (maxLength: 80)"},
		"clauses":{"type":"array","description":"(minItems: 2)","items":{"type":"object","additionalProperties":false,"properties":{"id":{"type":"string","description":"(pattern: \"^C-\")"}}}},
		"n":{"type":"integer","description":"(minimum: 1)"}}}`), &want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("adapted schema (-want +got):\n%s", diff)
	}
}

func TestStreamFromAServerThatAnswersWhole(t *testing.T) {
	api := newAPI(modelhttptest.Whole(t, "message_tool_use.json"))
	got, deltas, err := modelhttptest.Stream(t.Context(), newProvider(t, api), ndaRequest)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.ToolCalls) != 2 || len(deltas) != 3 || deltas[0].Text != got.Text || deltas[2].ArgumentsDelta != `{"query":"term of agreement"}` {
		t.Errorf("response %+v deltas %+v", got, deltas)
	}
}

func TestAHistoryStartingWithAnAnswerGetsAUserMessageFirst(t *testing.T) {
	api := newAPI(modelhttptest.Whole(t, "message_text.json"))
	_, err := newProvider(t, api).Generate(t.Context(), bindings.GenerateRequest{Model: "claude-sonnet-4-5", Messages: []bindings.ChatMessage{
		{Role: bindings.ChatSystem, Content: "You draft clauses."},
		{Role: bindings.ChatAssistant, Content: "Here is the clause."},
		{Role: bindings.ChatUser, Content: "Shorter, please."},
	}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := api.Requests[0]["messages"].([]any)
	first := msgs[0].(map[string]any)
	if len(msgs) != 3 || first["role"] != "user" || first["content"].([]any)[0].(map[string]any)["text"] != EarlierConversationOmitted {
		t.Errorf("messages %v", msgs)
	}
}

func TestRetryAfterIsHonouredAndBoundedByTheContext(t *testing.T) {
	modelhttptest.CheckRetryWaitIsBoundedByTheContext(t, http.StatusTooManyRequests, func(url string) bindings.Provider {
		return New(&Options{BaseURL: url, MaxBackoff: time.Minute})
	}, ndaRequest)
}

func TestStreamCancelClosesTheConnection(t *testing.T) {
	blocks := strings.SplitAfter(string(fixture(t, "stream_text.sse")), "\n\n")
	modelhttptest.CheckStreamCancelClosesTheConnection(t, func(h http.Handler) bindings.StreamingProvider {
		return newProvider(t, h)
	}, ndaRequest, []byte(strings.Join(blocks[:4], "")))
}

// TestDefaultModelsClaimOnlyWhatTheProviderHas: a model's features are the
// ones the provider implements (tool calls, structured output, streaming);
// vision is not one (messages carry text only).
func TestDefaultModelsClaimOnlyWhatTheProviderHas(t *testing.T) {
	var _ bindings.StreamingProvider = New(nil)
	modelhttptest.CheckDefaultModels(t, DefaultModels)
}
