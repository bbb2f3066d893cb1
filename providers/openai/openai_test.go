package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeAPI answers like the Chat Completions API and records the requests.
type fakeAPI struct {
	mu       sync.Mutex
	requests []map[string]any
	headers  []http.Header
	answer   func(n int, w http.ResponseWriter)
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.headers = append(f.headers, r.Header.Clone())
	n := len(f.requests)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	f.answer(n, w)
}

func newProvider(t *testing.T, h http.Handler) *Provider {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return New(&Options{BaseURL: srv.URL + "/v1", APIKey: "sk-test", MinBackoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond})
}

var searchTool = bindings.ToolDefinition{
	Name:        "acme.clause-search",
	Description: "Search the clause library.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
}

func TestParallelToolCallsMapBackToToolIDs(t *testing.T) {
	api := &fakeAPI{}
	api.answer = func(_ int, w http.ResponseWriter) { w.Write(fixture(t, "parallel_tool_calls.json")) }
	p := newProvider(t, api)
	got, err := p.Generate(t.Context(), bindings.GenerateRequest{
		Model: "gpt-4o-mini",
		Messages: []bindings.ChatMessage{
			{Role: bindings.ChatSystem, Content: "You draft clauses."},
			{Role: bindings.ChatUser, Content: "Draft an NDA."},
		},
		Tools: []bindings.ToolDefinition{searchTool},
	})
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
	tools := api.requests[0]["tools"].([]any)
	fn := tools[0].(map[string]any)["function"].(map[string]any)
	if fn["name"] != "acme_clause-search" || fn["parameters"].(map[string]any)["type"] != "object" {
		t.Errorf("tool definition = %v", fn)
	}
	if got := api.headers[0].Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q", got)
	}
}

func TestToolResultsCarryToolCallIDAndNullContent(t *testing.T) {
	api := &fakeAPI{}
	api.answer = func(_ int, w http.ResponseWriter) { w.Write(fixture(t, "final_text.json")) }
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
	msgs := api.requests[0]["messages"].([]any)
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

func TestRetries429ThenSucceeds(t *testing.T) {
	api := &fakeAPI{}
	api.answer = func(n int, w http.ResponseWriter) {
		if n == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write(fixture(t, "error_429.json"))
			return
		}
		w.Write(fixture(t, "final_text.json"))
	}
	p := newProvider(t, api)
	got, err := p.Generate(t.Context(), bindings.GenerateRequest{Model: "gpt-4o-mini", Messages: []bindings.ChatMessage{{Role: bindings.ChatUser, Content: "hi"}}, RequestID: "req-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(api.requests) != 2 || got.Text == "" {
		t.Fatalf("requests = %d, text %q", len(api.requests), got.Text)
	}
	if api.headers[0].Get("Idempotency-Key") != "req-1" || api.headers[1].Get("Idempotency-Key") != "req-1" {
		t.Error("the retry must carry the same idempotency key")
	}
}

func TestRetries5xxUpToTheLimit(t *testing.T) {
	api := &fakeAPI{}
	api.answer = func(_ int, w http.ResponseWriter) {
		w.WriteHeader(http.StatusBadGateway)
		w.Write([]byte(`{"error":{"message":"upstream unavailable","type":"server_error","param":null,"code":null}}`))
	}
	p := newProvider(t, api)
	var retries []bindings.ModelRetry
	ctx := bindings.WithModelRetryReporter(t.Context(), func(_ context.Context, r bindings.ModelRetry) { retries = append(retries, r) })
	_, err := p.Generate(ctx, bindings.GenerateRequest{Model: "gpt-4o-mini", Messages: []bindings.ChatMessage{{Role: bindings.ChatUser, Content: "hi"}}})
	var mi *agents.ModelInvocationError
	if !errors.As(err, &mi) || mi.Status != http.StatusBadGateway || mi.Message != "upstream unavailable" {
		t.Fatalf("err = %v", err)
	}
	if len(api.requests) != 4 {
		t.Errorf("attempts = %d, want 1 + 3 retries", len(api.requests))
	}
	// Each retry, not the last failure, is reported to the caller.
	if len(retries) != 3 || retries[0].Attempt != 1 || retries[2].Attempt != 3 || retries[2].Status != http.StatusBadGateway {
		t.Errorf("retries reported = %+v, want attempts 1 to 3, each 502", retries)
	}
}

func TestBadRequestIsNotRetriedAndCarriesTheMessage(t *testing.T) {
	api := &fakeAPI{}
	api.answer = func(_ int, w http.ResponseWriter) {
		w.WriteHeader(http.StatusBadRequest)
		w.Write(fixture(t, "error_400.json"))
	}
	p := newProvider(t, api)
	_, err := p.Generate(t.Context(), bindings.GenerateRequest{Model: "gpt-4o-mini", Messages: []bindings.ChatMessage{{Role: bindings.ChatUser, Content: "hi"}}})
	var mi *agents.ModelInvocationError
	if !errors.As(err, &mi) {
		t.Fatalf("err = %v, want *agents.ModelInvocationError", err)
	}
	if agents.CodeOf(err) != agents.CodeModelInvocationFailed || mi.Status != 400 ||
		!strings.HasPrefix(mi.Message, "Invalid parameter: messages with role 'tool'") || mi.Provider != "openai" {
		t.Errorf("err = %+v", mi)
	}
	if len(api.requests) != 1 {
		t.Errorf("attempts = %d, want 1", len(api.requests))
	}
}

func TestRetryWaitIsBoundedByTheContext(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	p := New(&Options{BaseURL: srv.URL, MaxBackoff: time.Minute})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.Generate(ctx, bindings.GenerateRequest{Model: "m", Messages: []bindings.ChatMessage{{Role: bindings.ChatUser, Content: "hi"}}})
	if agents.CodeOf(err) != agents.CodeModelInvocationFailed || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("Generate waited %v past its context", elapsed)
	}
	if calls.Load() != 1 {
		t.Errorf("calls = %d", calls.Load())
	}
}

func TestEnvironmentFillsEmptyOptions(t *testing.T) {
	api := &fakeAPI{}
	api.answer = func(_ int, w http.ResponseWriter) { w.Write(fixture(t, "final_text.json")) }
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1/")
	t.Setenv("OPENAI_API_KEY", "sk-env")
	p := New(nil)
	if _, err := p.Generate(t.Context(), bindings.GenerateRequest{Model: "gpt-4o", Messages: []bindings.ChatMessage{{Role: bindings.ChatUser, Content: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	if api.headers[0].Get("Authorization") != "Bearer sk-env" {
		t.Errorf("Authorization = %q", api.headers[0].Get("Authorization"))
	}
	if p.ID() != "openai" || len(p.Models()) != len(DefaultModels) {
		t.Errorf("id %q models %d", p.ID(), len(p.Models()))
	}
}

func TestNameMapIsReversibleOnCollision(t *testing.T) {
	m := newNameMap([]bindings.ToolDefinition{{Name: "a.b"}, {Name: "a_b"}, {Name: strings.Repeat("x", 80)}})
	for _, id := range []string{"a.b", "a_b", strings.Repeat("x", 80)} {
		w := m.encode(id)
		if len(w) > 64 || strings.ContainsAny(w, ".") {
			t.Errorf("encode(%q) = %q", id, w)
		}
		if got := m.decode(w); got != id {
			t.Errorf("decode(encode(%q)) = %q", id, got)
		}
	}
	if m.encode("a.b") == m.encode("a_b") {
		t.Error("two ids share a wire name")
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"2", 2 * time.Second, true},
		{"0.5", 500 * time.Millisecond, true},
		{now.Add(3 * time.Second).Format(http.TimeFormat), 3 * time.Second, true},
		{"", 0, false},
		{"soon", 0, false},
	} {
		got, ok := parseRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestDefaultModelsClaimOnlyWhatTheProviderHas: a model's features are the
// ones the provider implements (tool calls, structured output, streaming);
// vision is not one (messages carry text only).
func TestDefaultModelsClaimOnlyWhatTheProviderHas(t *testing.T) {
	has := map[string]bool{"tool-use": true, "json-mode": true, "streaming": true}
	var _ bindings.StreamingProvider = New(nil)
	for _, m := range DefaultModels {
		for _, f := range m.Features {
			if !has[f] {
				t.Errorf("%s claims %q", m.ID, f)
			}
		}
		if m.InputPricePerMTok <= 0 || m.OutputPricePerMTok <= 0 {
			t.Errorf("%s has no price", m.ID)
		}
	}
}
