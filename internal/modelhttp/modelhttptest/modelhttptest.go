// Package modelhttptest is test support for the HTTP model providers
// (providers/openai, providers/anthropic): a fake API that records what it
// is sent, the fixtures under a package's testdata, and the checks every
// provider built on modelhttp passes.
package modelhttptest

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
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// SearchTool is the tool the providers' tests offer the model; its id has
// a dot, which the providers encode into the name the API allows.
var SearchTool = bindings.ToolDefinition{
	Name:        "acme.clause-search",
	Description: "Search the clause library.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
}

// DraftNDA is the request the providers' tests send most, for model: a
// system prompt, a user message asking for an NDA, and SearchTool offered.
func DraftNDA(model string) bindings.GenerateRequest {
	return bindings.GenerateRequest{
		Model: model,
		Messages: []bindings.ChatMessage{
			{Role: bindings.ChatSystem, Content: "You draft clauses."},
			{Role: bindings.ChatUser, Content: "Draft an NDA."},
		},
		Tools: []bindings.ToolDefinition{SearchTool},
	}
}

// SayHi is the smallest request, for model: one user message, "hi".
func SayHi(model string) bindings.GenerateRequest {
	return bindings.GenerateRequest{Model: model, Messages: []bindings.ChatMessage{{Role: bindings.ChatUser, Content: "hi"}}}
}

// Whole is a FakeAPI.Answer that writes the fixture testdata/name (read
// now) as a whole answer, every time.
func Whole(t testing.TB, name string) func(n int, w http.ResponseWriter, r *http.Request) {
	t.Helper()
	b := Fixture(t, name)
	return func(_ int, w http.ResponseWriter, _ *http.Request) { w.Write(b) }
}

// Streamed is a FakeAPI.Answer that writes the fixture testdata/name (read
// now) as a stream, with SSE, every time.
func Streamed(t testing.TB, name string) func(n int, w http.ResponseWriter, r *http.Request) {
	t.Helper()
	b := Fixture(t, name)
	return func(_ int, w http.ResponseWriter, _ *http.Request) { SSE(w, b) }
}

// Fixture returns the file testdata/name of the package under test.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// SSE writes a stream fixture as the APIs do: text/event-stream, flushed.
func SSE(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Write(body)
	w.(http.Flusher).Flush()
}

// FakeAPI answers POST requests to Path like a model API and records each
// request's JSON body and headers; any other request is a 404 and a body
// that is not JSON a 400. Answer writes the n-th answer (from 1), its
// Content-Type preset to application/json. Read Requests and Headers once
// the calls under test have returned.
type FakeAPI struct {
	Path   string
	Answer func(n int, w http.ResponseWriter, r *http.Request)

	mu       sync.Mutex
	Requests []map[string]any
	Headers  []http.Header
}

// ServeHTTP records the request and answers it.
func (f *FakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != f.Path {
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
	f.Requests = append(f.Requests, req)
	f.Headers = append(f.Headers, r.Header.Clone())
	n := len(f.Requests)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	f.Answer(n, w, r)
}

// Count returns how many requests were answered.
func (f *FakeAPI) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.Requests)
}

// Request returns the JSON body of the n-th request (from 1), as Answer
// is told n.
func (f *FakeAPI) Request(n int) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.Requests[n-1]
}

// Server serves h for the test and returns its URL.
func Server(t testing.TB, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// CheckDefaultModels: a model's features are the ones an HTTP provider
// implements (tool calls, structured output, streaming); vision is not one
// (messages carry text only); every model has a price.
func CheckDefaultModels(t *testing.T, models []bindings.ModelInfo) {
	t.Helper()
	has := map[string]bool{"tool-use": true, "json-mode": true, "streaming": true}
	for _, m := range models {
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

// CheckRetryWaitIsBoundedByTheContext: a provider made by newProvider for
// a server's URL (with a MaxBackoff of a minute) that meets an answer of
// status asking to be retried after 30 s returns when the context's
// 100 ms deadline passes, without a second request, with a
// model-invocation-failed error carrying the status and the deadline.
func CheckRetryWaitIsBoundedByTheContext(t *testing.T, status int, newProvider func(baseURL string) bindings.Provider, req bindings.GenerateRequest) {
	t.Helper()
	var mu sync.Mutex
	calls := 0
	url := Server(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(status)
	}))
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := newProvider(url).Generate(ctx, req)
	var mi *agents.ModelInvocationError
	if !errors.As(err, &mi) || mi.Status != status || agents.CodeOf(err) != agents.CodeModelInvocationFailed || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want model-invocation-failed with status %d wrapping context.DeadlineExceeded", err, status)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("Generate waited %v past its context", elapsed)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Errorf("calls = %d, want 1", calls)
	}
}

// CheckStreamCancelClosesTheConnection: a stream whose server has sent
// prefix (enough for a first delta) and then waits, cancelled from the
// first delta, returns at once with a model-invocation-failed error
// wrapping context.Canceled, and the server sees its connection close.
func CheckStreamCancelClosesTheConnection(t *testing.T, newProvider func(h http.Handler) bindings.StreamingProvider, req bindings.GenerateRequest, prefix []byte) {
	t.Helper()
	closed := make(chan time.Time, 1)
	p := newProvider(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SSE(w, prefix)
		select {
		case <-r.Context().Done():
			closed <- time.Now()
		case <-time.After(10 * time.Second):
		}
	}))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var cancelledAt time.Time
	_, err := p.GenerateStream(ctx, req, func(bindings.Delta) {
		if cancelledAt.IsZero() {
			cancelledAt = time.Now()
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || agents.CodeOf(err) != agents.CodeModelInvocationFailed {
		t.Fatalf("err = %v, want a model-invocation-failed wrapping context.Canceled", err)
	}
	if d := time.Since(cancelledAt); d > 2*time.Second {
		t.Errorf("GenerateStream returned %v after the cancel", d)
	}
	select {
	case at := <-closed:
		if d := at.Sub(cancelledAt); d > 2*time.Second {
			t.Errorf("the server saw the connection close %v after the cancel", d)
		}
	case <-time.After(3 * time.Second):
		t.Error("the server never saw the connection close")
	}
}

// FinishFixtures names a provider's answer fixtures and where they carry
// the API's finish reason: Field holds Value in both JSON, a whole answer,
// and SSE, the same answer streamed.
type FinishFixtures struct {
	Path         string // the API's path, as FakeAPI.Path
	JSON, SSE    string // names under testdata
	Field, Value string // e.g. "stop_reason", "end_turn"
}

// CheckFinishReasons: an answer whose finish reason is the API's reason
// gives, whole and streamed (subtests reason/generate and reason/stream),
// a response whose FinishReason is want[reason]. newProvider makes the
// provider under test for a fake API serving fx's fixtures with Field set
// to reason.
func CheckFinishReasons(t *testing.T, newProvider func(h http.Handler) bindings.StreamingProvider, req bindings.GenerateRequest, fx FinishFixtures, want map[string]string) {
	t.Helper()
	for reason, finish := range want {
		t.Run(reason, func(t *testing.T) {
			Both(t, func(t *testing.T, stream bool) {
				whole := withField(t, Fixture(t, fx.JSON), fx.Field, fx.Value, reason)
				streamed := withField(t, Fixture(t, fx.SSE), fx.Field, fx.Value, reason)
				api := &FakeAPI{Path: fx.Path, Answer: func(_ int, w http.ResponseWriter, _ *http.Request) {
					if stream {
						SSE(w, streamed)
						return
					}
					w.Write(whole)
				}}
				got, err := Call(t.Context(), newProvider(api), stream, req, nil)
				if err != nil {
					t.Fatal(err)
				}
				if got.FinishReason != finish {
					t.Errorf("finish reason = %q, want %q", got.FinishReason, finish)
				}
			})
		})
	}
}

// withField returns body with its first "field":"from" (or, as indented
// JSON writes it, "field": "from") made to hold to.
func withField(t testing.TB, body []byte, field, from, to string) []byte {
	t.Helper()
	for _, sep := range []string{":", ": "} {
		old := `"` + field + `"` + sep + `"` + from + `"`
		if strings.Contains(string(body), old) {
			return []byte(strings.Replace(string(body), old, `"`+field+`"`+sep+`"`+to+`"`, 1))
		}
	}
	t.Fatalf("the fixture has no %q of %q", field, from)
	return nil
}

// Both runs fn once over Generate and once over GenerateStream (stream
// true), as the subtests "generate" and "stream".
func Both(t *testing.T, fn func(t *testing.T, stream bool)) {
	t.Helper()
	t.Run("generate", func(t *testing.T) { fn(t, false) })
	t.Run("stream", func(t *testing.T) { fn(t, true) })
}

// Stream calls p.GenerateStream for req and returns, with its answer, the
// deltas it delivered, in order.
func Stream(ctx context.Context, p bindings.StreamingProvider, req bindings.GenerateRequest) (bindings.GenerateResponse, []bindings.Delta, error) {
	var deltas []bindings.Delta
	got, err := p.GenerateStream(ctx, req, func(d bindings.Delta) { deltas = append(deltas, d) })
	return got, deltas, err
}

// Call calls p.GenerateStream with onDelta when stream is set, else
// p.Generate.
func Call(ctx context.Context, p bindings.StreamingProvider, stream bool, req bindings.GenerateRequest, onDelta func(bindings.Delta)) (bindings.GenerateResponse, error) {
	if stream {
		return p.GenerateStream(ctx, req, onDelta)
	}
	return p.Generate(ctx, req)
}
