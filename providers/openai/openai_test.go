package openai

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

// newAPI is a fake Chat Completions API answering with answer.
func newAPI(answer func(n int, w http.ResponseWriter, r *http.Request)) *modelhttptest.FakeAPI {
	return &modelhttptest.FakeAPI{Path: "/v1/chat/completions", Answer: answer}
}

func newProvider(t *testing.T, h http.Handler) *Provider {
	t.Helper()
	return New(&Options{BaseURL: modelhttptest.Server(t, h) + "/v1", APIKey: "sk-test", MinBackoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond})
}

var searchTool = modelhttptest.SearchTool

func TestParallelToolCallsMapBackToToolIDs(t *testing.T) {
	api := newAPI(modelhttptest.Whole(t, "parallel_tool_calls.json"))
	got, err := newProvider(t, api).Generate(t.Context(), modelhttptest.DraftNDA("gpt-4o-mini"))
	if err != nil {
		t.Fatal(err)
	}
	want := bindings.GenerateResponse{
		FinishReason: "tool_calls",
		Model:        "gpt-4o-mini-2024-07-18",
		ToolCalls: []bindings.ToolCall{
			{ID: "call_9pWbqTMKr1Kx0Lw5", Name: "acme.clause-search", Arguments: json.RawMessage(`{"query":"confidentiality"}`)},
			{ID: "call_4HfQ2zNn8sYd7Ua1", Name: "acme.clause-search", Arguments: json.RawMessage(`{"query":"term of agreement"}`)},
		},
		Usage: bindings.Usage{InputTokens: 412, OutputTokens: 58, CostUsd: (412*0.15 + 58*0.60) / 1e6},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-15)); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	// The request offered the tool under an encoded name with its schema.
	tools := api.Requests[0]["tools"].([]any)
	fn := tools[0].(map[string]any)["function"].(map[string]any)
	if fn["name"] != "acme_clause-search" || fn["parameters"].(map[string]any)["type"] != "object" {
		t.Errorf("tool definition = %v", fn)
	}
	if got := api.Headers[0].Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q", got)
	}
}

func TestToolResultsCarryToolCallIDAndNullContent(t *testing.T) {
	api := newAPI(modelhttptest.Whole(t, "final_text.json"))
	p := newProvider(t, api)
	got, err := p.Generate(t.Context(), bindings.GenerateRequest{
		Model: "gpt-4o-mini",
		Messages: []bindings.ChatMessage{
			{Role: bindings.ChatUser, Content: "Draft an NDA."},
			{Role: bindings.ChatAssistant, ToolCalls: []bindings.ToolCall{{ID: "call_1", Name: "acme.clause-search", Arguments: json.RawMessage(`{"query":"nda"}`)}}},
			{Role: bindings.ChatTool, ToolCallID: "call_1", Content: `{"clauses":["c1"]}`},
		},
		Tools: []bindings.ToolDefinition{searchTool},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != "Here is a mutual confidentiality clause for Acme LLP." || got.FinishReason != "stop" || len(got.ToolCalls) != 0 {
		t.Errorf("response = %+v", got)
	}
	msgs := api.Requests[0]["messages"].([]any)
	assistant := msgs[1].(map[string]any)
	if c, present := assistant["content"]; !present || c != nil {
		t.Errorf("assistant content = %#v (present %v), want null", c, present)
	}
	call := assistant["tool_calls"].([]any)[0].(map[string]any)
	if call["type"] != "function" || call["function"].(map[string]any)["name"] != "acme_clause-search" ||
		call["function"].(map[string]any)["arguments"] != `{"query":"nda"}` {
		t.Errorf("tool call = %v", call)
	}
	tool := msgs[2].(map[string]any)
	if tool["role"] != "tool" || tool["tool_call_id"] != "call_1" || tool["content"] != `{"clauses":["c1"]}` {
		t.Errorf("tool message = %v", tool)
	}
}

// TestRetries429ThenSucceeds: a 429 is retried, whole or streamed, with
// the same idempotency key; a streamed answer's deltas spell its text.
func TestRetries429ThenSucceeds(t *testing.T) {
	modelhttptest.Both(t, func(t *testing.T, stream bool) {
		api := newAPI(func(n int, w http.ResponseWriter, _ *http.Request) {
			if n == 1 {
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(http.StatusTooManyRequests)
				w.Write(fixture(t, "error_429.json"))
				return
			}
			if stream {
				sse(w, fixture(t, "stream_text.sse"))
				return
			}
			w.Write(fixture(t, "final_text.json"))
		})
		var text strings.Builder
		req := modelhttptest.SayHi("gpt-4o-mini")
		req.RequestID = "req-1"
		got, err := modelhttptest.Call(t.Context(), newProvider(t, api), stream, req, func(d bindings.Delta) { text.WriteString(d.Text) })
		if err != nil {
			t.Fatal(err)
		}
		if len(api.Requests) != 2 || got.Text == "" {
			t.Fatalf("requests = %d, text %q", len(api.Requests), got.Text)
		}
		if api.Headers[0].Get("Idempotency-Key") != "req-1" || api.Headers[1].Get("Idempotency-Key") != "req-1" {
			t.Error("the retry must carry the same idempotency key")
		}
		if stream && got.Text != text.String() {
			t.Errorf("text %q, deltas %q", got.Text, text.String())
		}
	})
}

func TestRetries5xxUpToTheLimit(t *testing.T) {
	api := newAPI(func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		w.Write([]byte(`{"error":{"message":"upstream unavailable","type":"server_error","param":null,"code":null}}`))
	})
	p := newProvider(t, api)
	var retries []bindings.ModelRetry
	ctx := bindings.WithModelRetryReporter(t.Context(), func(_ context.Context, r bindings.ModelRetry) { retries = append(retries, r) })
	_, err := p.Generate(ctx, modelhttptest.SayHi("gpt-4o-mini"))
	var mi *agents.ModelInvocationError
	if !errors.As(err, &mi) || mi.Status != http.StatusBadGateway || mi.Message != "upstream unavailable" {
		t.Fatalf("err = %v", err)
	}
	if len(api.Requests) != 4 {
		t.Errorf("attempts = %d, want 1 + 3 retries", len(api.Requests))
	}
	// Each retry, not the last failure, is reported to the caller.
	if len(retries) != 3 || retries[0].Attempt != 1 || retries[2].Attempt != 3 || retries[2].Status != http.StatusBadGateway {
		t.Errorf("retries reported = %+v, want attempts 1 to 3, each 502", retries)
	}
}

func TestBadRequestIsNotRetriedAndCarriesTheMessage(t *testing.T) {
	api := newAPI(func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		w.Write(fixture(t, "error_400.json"))
	})
	p := newProvider(t, api)
	_, err := p.Generate(t.Context(), modelhttptest.SayHi("gpt-4o-mini"))
	var mi *agents.ModelInvocationError
	if !errors.As(err, &mi) {
		t.Fatalf("err = %v, want *agents.ModelInvocationError", err)
	}
	if agents.CodeOf(err) != agents.CodeModelInvocationFailed || mi.Status != 400 ||
		!strings.HasPrefix(mi.Message, "Invalid parameter: messages with role 'tool'") || mi.Provider != "openai" {
		t.Errorf("err = %+v", mi)
	}
	if len(api.Requests) != 1 {
		t.Errorf("attempts = %d, want 1", len(api.Requests))
	}
}

func TestEnvironmentFillsEmptyOptions(t *testing.T) {
	api := newAPI(modelhttptest.Whole(t, "final_text.json"))
	t.Setenv("OPENAI_BASE_URL", modelhttptest.Server(t, api)+"/v1/")
	t.Setenv("OPENAI_API_KEY", "sk-env")
	p := New(nil)
	if _, err := p.Generate(t.Context(), modelhttptest.SayHi("gpt-4o")); err != nil {
		t.Fatal(err)
	}
	if api.Headers[0].Get("Authorization") != "Bearer sk-env" {
		t.Errorf("Authorization = %q", api.Headers[0].Get("Authorization"))
	}
	if p.ID() != "openai" || len(p.Models()) != len(DefaultModels) {
		t.Errorf("id %q models %d", p.ID(), len(p.Models()))
	}
}

func TestRetryWaitIsBoundedByTheContext(t *testing.T) {
	modelhttptest.CheckRetryWaitIsBoundedByTheContext(t, http.StatusServiceUnavailable, func(url string) bindings.Provider {
		return New(&Options{BaseURL: url, MaxBackoff: time.Minute})
	}, modelhttptest.SayHi("m"))
}

// TestDefaultModelsClaimOnlyWhatTheProviderHas: a model's features are the
// ones the provider implements (tool calls, structured output, streaming);
// vision is not one (messages carry text only).
func TestDefaultModelsClaimOnlyWhatTheProviderHas(t *testing.T) {
	var _ bindings.StreamingProvider = New(nil)
	modelhttptest.CheckDefaultModels(t, DefaultModels)
}
