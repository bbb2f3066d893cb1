package turn_test

import (
	"log/slog"
	"net/http"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn"
)

// TestProviderRetriesAreLoggedAndEmitted drives the fixture's turn over
// the real HTTP providers against a local server that answers the first
// model call's first attempt 429 (Retry-After: 0.02) and the second
// call's first attempt 503: each retry is a ModelCallRetryEvent between
// its call's model.call.started and model.call.completed, and a warn
// record with the attempt, status and Retry-After, while the turn
// completes as without retries.
func TestProviderRetriesAreLoggedAndEmitted(t *testing.T) {
	for _, api := range []string{"openai", "anthropic"} {
		for _, stream := range []bool{false, true} {
			name := api
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				wire := &wireAPI{t: t, api: api}
				wire.hook = func(n int, _ map[string]any, w http.ResponseWriter, _ *http.Request) bool {
					switch n {
					case 1:
						w.Header().Set("Retry-After", "0.02")
						w.WriteHeader(http.StatusTooManyRequests)
					case 3:
						w.WriteHeader(http.StatusServiceUnavailable)
					default:
						return false
					}
					w.Write([]byte(`{"error":{"type":"overloaded_error","message":"try again"}}`))
					return true
				}
				sp := newWireProvider(t, wire)
				var p bindings.Provider = plain{sp}
				if stream {
					p = sp
				}
				f := newFixture(t, nil, nil)
				b := f.bindings()
				b.Providers = bindings.Providers{p}
				logs := newCapture(slog.LevelWarn)
				b.Logger = slog.New(logs)
				res, err := turn.Invoke(t.Context(), f.input("Draft an NDA for Globex."), b)
				if err != nil || res.Status != turn.StatusCompleted {
					t.Fatalf("Invoke = %v, %v", res.Status, err)
				}
				if wire.count() != 4 {
					t.Fatalf("%d requests, want 2 model calls of which each was sent twice", wire.count())
				}

				var retries []turn.ModelCallRetryEvent
				open, requestID := 0, ""
				for _, e := range f.events.events {
					switch e := e.(type) {
					case turn.ModelCallStartedEvent:
						open, requestID = e.Iteration, e.RequestID
					case turn.ModelCallCompletedEvent:
						open = 0
					case turn.ModelCallRetryEvent:
						if e.Iteration != open || open == 0 || e.RequestID != requestID || e.RunID != res.RunID {
							t.Errorf("retry %+v outside its call (open iteration %d, request %s)", e, open, requestID)
						}
						retries = append(retries, e)
					}
				}
				if len(retries) != 2 {
					t.Fatalf("%d retry events, want 2: %+v", len(retries), retries)
				}
				first, second := retries[0], retries[1]
				if first.Attempt != 1 || first.Status != http.StatusTooManyRequests || first.RetryAfterMs != 20 || first.WaitMs != 10 ||
					first.Code != agents.CodeModelInvocationFailed || first.Provider != p.ID() || first.Kind() != "model.call.retry" {
					t.Errorf("first retry = %+v, want attempt 1, 429, Retry-After 20ms capped to the 10ms MaxBackoff", first)
				}
				if second.Attempt != 1 || second.Status != http.StatusServiceUnavailable || second.RetryAfterMs != 0 || second.Iteration != first.Iteration+1 {
					t.Errorf("second retry = %+v, want attempt 1 of the next call, 503, no Retry-After", second)
				}

				var warned []captured
				for _, r := range logs.all() {
					if r.msg == "turn model call retry" {
						warned = append(warned, r)
					}
				}
				if len(warned) != 2 {
					t.Fatalf("%d retry records, want 2: %+v", len(warned), logs.all())
				}
				w := warned[0]
				if w.level != slog.LevelWarn || w.attrs["attempt"] != "1" || w.attrs["status"] != "429" || w.attrs["retry_after"] != "20ms" ||
					w.attrs["run_id"] != res.RunID || w.attrs["request_id"] != first.RequestID || w.attrs["code"] != agents.CodeModelInvocationFailed {
					t.Errorf("retry record = %+v", w)
				}
				if _, ok := w.attrs["error"]; ok {
					t.Error("the record carries the error message without LogContent")
				}
				if warned[1].attrs["status"] != "503" || warned[1].attrs["retry_after"] != "0s" {
					t.Errorf("second retry record = %+v", warned[1])
				}
			})
		}
	}
}
