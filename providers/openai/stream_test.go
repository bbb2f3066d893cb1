package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/modelhttp"
	"github.com/kindgi/agents/internal/modelhttp/modelhttptest"
)

// hiRequest is the NDA request with the request id of a turn's model call.
var hiRequest = func() bindings.GenerateRequest {
	req := modelhttptest.DraftNDA("gpt-4o-mini")
	req.RequestID = "run-1/agent-loop/1/model-call"
	return req
}()

// streamAndGenerate runs the same request streamed (over the SSE fixture)
// and not (over the JSON fixture) and returns both responses and the
// deltas.
func streamAndGenerate(t *testing.T, sseFixture, jsonFixture string) (streamed, generated bindings.GenerateResponse, deltas []bindings.Delta, api *modelhttptest.FakeAPI) {
	t.Helper()
	api = newAPI(modelhttptest.Streamed(t, sseFixture))
	streamed, deltas, err := modelhttptest.Stream(t.Context(), newProvider(t, api), hiRequest)
	if err != nil {
		t.Fatal(err)
	}
	plain := newAPI(modelhttptest.Whole(t, jsonFixture))
	generated, err = newProvider(t, plain).Generate(t.Context(), hiRequest)
	if err != nil {
		t.Fatal(err)
	}
	return streamed, generated, deltas, api
}

func TestStreamTextAssemblesWhatGenerateReturns(t *testing.T) {
	streamed, generated, deltas, api := streamAndGenerate(t, "stream_text.sse", "final_text.json")
	if diff := cmp.Diff(generated, streamed); diff != "" {
		t.Errorf("streamed response differs from Generate's (-generate +stream):\n%s", diff)
	}
	want := []bindings.Delta{{Text: "Here is a mutual"}, {Text: " confidentiality clause"}, {Text: " for Acme LLP."}}
	if diff := cmp.Diff(want, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	if streamed.Usage.InputTokens != 530 || streamed.Usage.OutputTokens != 12 || streamed.Usage.CostUsd == 0 {
		t.Errorf("usage = %+v, want the final usage chunk's, priced", streamed.Usage)
	}
	req := api.Requests[0]
	if req["stream"] != true {
		t.Errorf("stream = %v, want true", req["stream"])
	}
	if so, _ := req["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("stream_options = %v, want include_usage true", req["stream_options"])
	}
	if api.Headers[0].Get("Idempotency-Key") != hiRequest.RequestID || api.Headers[0].Get("Accept") != "text/event-stream" {
		t.Errorf("Idempotency-Key = %q, Accept = %q", api.Headers[0].Get("Idempotency-Key"), api.Headers[0].Get("Accept"))
	}
}

func TestStreamParallelToolCallsSplitMidToken(t *testing.T) {
	streamed, generated, deltas, _ := streamAndGenerate(t, "stream_parallel_tool_calls.sse", "parallel_tool_calls.json")
	if diff := cmp.Diff(generated, streamed); diff != "" {
		t.Errorf("streamed response differs from Generate's (-generate +stream):\n%s", diff)
	}
	if len(streamed.ToolCalls) != 2 || streamed.FinishReason != "tool_calls" {
		t.Fatalf("response = %+v", streamed)
	}
	args := map[int]string{}
	for _, d := range deltas {
		if d.Text != "" {
			t.Errorf("text delta %q in a tool-call answer", d.Text)
		}
		args[d.ToolCallIndex] += d.ArgumentsDelta
	}
	for i, c := range streamed.ToolCalls {
		if args[i] != string(c.Arguments) {
			t.Errorf("call %d: deltas give %s, response has %s", i, args[i], c.Arguments)
		}
	}
	// The first delta of each call names it, with the tool id decoded.
	firsts := []bindings.Delta{deltas[0], deltas[4]}
	want := []bindings.Delta{
		{ToolCallIndex: 0, ToolCallID: "call_9pWbqTMKr1Kx0Lw5", ToolName: "acme.clause-search"},
		{ToolCallIndex: 1, ToolCallID: "call_4HfQ2zNn8sYd7Ua1", ToolName: "acme.clause-search"},
	}
	if diff := cmp.Diff(want, firsts); diff != "" {
		t.Errorf("first deltas (-want +got):\n%s", diff)
	}
	if deltas[1].ArgumentsDelta != `{"qu` || deltas[1].ToolCallID != "" {
		t.Errorf("second delta = %+v, want a bare piece of arguments", deltas[1])
	}
}

// TestFinishReasons: the finish reason of the answer, whole or streamed,
// is the response's.
func TestFinishReasons(t *testing.T) {
	modelhttptest.CheckFinishReasons(t, func(h http.Handler) bindings.StreamingProvider { return newProvider(t, h) }, hiRequest,
		modelhttptest.FinishFixtures{Path: "/v1/chat/completions", JSON: "parallel_tool_calls.json", SSE: "stream_parallel_tool_calls.sse", Field: "finish_reason", Value: "tool_calls"},
		map[string]string{"stop": "stop", "length": "length", "content_filter": "content_filter", "tool_calls": "tool_calls"})
}

func TestStreamErrorMidStreamFailsWithoutRetry(t *testing.T) {
	api := newAPI(modelhttptest.Streamed(t, "stream_error.sse"))
	_, deltas, err := modelhttptest.Stream(t.Context(), newProvider(t, api), hiRequest)
	var mi *agents.ModelInvocationError
	if !errors.As(err, &mi) || !strings.Contains(mi.Message, "The server had an error") {
		t.Fatalf("err = %v, want the stream's error as *agents.ModelInvocationError", err)
	}
	if len(api.Requests) != 1 {
		t.Errorf("requests = %d: a stream that delivered deltas must not be retried", len(api.Requests))
	}
	if len(deltas) != 1 || deltas[0].Text != "Here is" {
		t.Errorf("deltas = %+v", deltas)
	}
}

func TestStreamFailureBeforeAnyDeltaIsRetried(t *testing.T) {
	api := newAPI(func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			sse(w, []byte(`data: {"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}`+"\n\n"))
			return
		}
		sse(w, fixture(t, "stream_text.sse"))
	})
	got, err := newProvider(t, api).GenerateStream(t.Context(), hiRequest, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(api.Requests) != 2 || got.Text != "Here is a mutual confidentiality clause for Acme LLP." {
		t.Errorf("requests %d, text %q", len(api.Requests), got.Text)
	}
	if api.Headers[1].Get("Idempotency-Key") != hiRequest.RequestID {
		t.Error("the retry must carry the same idempotency key")
	}
}

func TestStreamBrokenConnectionMidStream(t *testing.T) {
	api := newAPI(func(_ int, w http.ResponseWriter, _ *http.Request) {
		// Two chunks, then the connection drops: no finish reason, no [DONE].
		lines := strings.SplitAfter(string(fixture(t, "stream_text.sse")), "\n\n")
		sse(w, []byte(lines[0]+lines[1]+lines[2]))
		panic(http.ErrAbortHandler)
	})
	_, err := newProvider(t, api).GenerateStream(t.Context(), hiRequest, func(bindings.Delta) {})
	if agents.CodeOf(err) != agents.CodeModelInvocationFailed {
		t.Fatalf("err = %v, want model-invocation-failed", err)
	}
	if len(api.Requests) != 1 {
		t.Errorf("requests = %d, want 1 (deltas were delivered)", len(api.Requests))
	}
}

func TestStreamCancelClosesTheConnection(t *testing.T) {
	lines := strings.SplitAfter(string(fixture(t, "stream_text.sse")), "\n\n")
	modelhttptest.CheckStreamCancelClosesTheConnection(t, func(h http.Handler) bindings.StreamingProvider {
		return newProvider(t, h)
	}, hiRequest, []byte(lines[0]+lines[1]+lines[2]))
}

func TestSettingsAndOutputMapToTheRequest(t *testing.T) {
	temp, topP, maxTok, seed := 0.0, 0.9, 256, int64(7)
	strictSchemaDoc := json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}},"required":["title","tags"],"additionalProperties":false}`)
	looseSchema := json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}}}`)
	for _, tc := range []struct {
		name       string
		req        bindings.GenerateRequest
		opts       Options
		want       map[string]any
		wantAbsent []string
	}{
		{
			name:       "none",
			req:        bindings.GenerateRequest{Model: "gpt-4o-mini", Messages: hiRequest.Messages},
			wantAbsent: []string{"temperature", "top_p", "max_completion_tokens", "max_tokens", "stop", "seed", "response_format", "stream", "stream_options", "tools"},
		},
		{
			name: "settings",
			req: bindings.GenerateRequest{Model: "gpt-4o-mini", Messages: hiRequest.Messages, Settings: bindings.ModelSettings{
				Temperature: &temp, TopP: &topP, MaxOutputTokens: &maxTok, Stop: []string{"END"}, Seed: &seed,
			}},
			want: map[string]any{"temperature": 0.0, "top_p": 0.9, "max_completion_tokens": 256.0, "stop": []any{"END"}, "seed": 7.0},
		},
		{
			name: "legacy max tokens",
			req:  bindings.GenerateRequest{Model: "gpt-4o-mini", Messages: hiRequest.Messages, Settings: bindings.ModelSettings{MaxOutputTokens: &maxTok}},
			opts: Options{LegacyMaxTokens: true},
			want: map[string]any{"max_tokens": 256.0}, wantAbsent: []string{"max_completion_tokens"},
		},
		{
			name: "strict output",
			req:  bindings.GenerateRequest{Model: "gpt-4o-mini", Messages: hiRequest.Messages, Output: strictSchemaDoc},
			want: map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{
				"name": "output", "strict": true, "schema": decode(t, strictSchemaDoc),
			}}},
		},
		{
			name: "loose output",
			req:  bindings.GenerateRequest{Model: "gpt-4o-mini", Messages: hiRequest.Messages, Output: looseSchema},
			want: map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{
				"name": "output", "strict": false, "schema": decode(t, looseSchema),
			}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newAPI(modelhttptest.Whole(t, "final_text.json"))
			opts := tc.opts
			opts.BaseURL, opts.APIKey = strings.TrimSuffix(newProvider(t, api).c.Endpoint(), "/chat/completions"), "sk"
			if _, err := New(&opts).Generate(t.Context(), tc.req); err != nil {
				t.Fatal(err)
			}
			got := api.Requests[0]
			for k, v := range tc.want {
				if diff := cmp.Diff(v, got[k], cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s (-want +got):\n%s", k, diff)
				}
			}
			for _, k := range tc.wantAbsent {
				if v, ok := got[k]; ok {
					t.Errorf("%s = %v, want it absent", k, v)
				}
			}
		})
	}
}

func decode(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestStreamFromAServerThatAnswersWhole(t *testing.T) {
	api := newAPI(modelhttptest.Whole(t, "final_text.json")) // application/json
	got, deltas, err := modelhttptest.Stream(t.Context(), newProvider(t, api), hiRequest)
	if err != nil {
		t.Fatal(err)
	}
	if len(deltas) != 1 || deltas[0].Text != got.Text || got.Text == "" || len(api.Requests) != 1 {
		t.Errorf("response %+v deltas %+v", got, deltas)
	}
}

// FuzzStreamAssembler: any stream body is folded without a panic, and the
// text deltas always spell the assembled text.
func FuzzStreamAssembler(f *testing.F) {
	for _, name := range []string{"stream_text.sse", "stream_parallel_tool_calls.sse", "stream_error.sse"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	p := New(&Options{BaseURL: "http://127.0.0.1:1"})
	f.Fuzz(func(t *testing.T, body []byte) {
		var text strings.Builder
		a := &streamAssembler{names: modelhttp.ToolNames([]bindings.ToolDefinition{searchTool}), emit: func(d bindings.Delta) { text.WriteString(d.Text) }}
		if a.read(bytes.NewReader(body)) != nil {
			return
		}
		c := a.choice()
		out, err := p.assemble(hiRequest, a.names, c, a.model, a.usage)
		if err == nil && out.Text != text.String() {
			t.Fatalf("deltas spell %q, text is %q", text.String(), out.Text)
		}
	})
}
