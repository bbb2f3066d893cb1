package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// TestQuickstartOnAChatCompletionsServer runs the quickstart with
// -provider openai against a local server speaking the Chat Completions
// API: two requests, the second carrying the tool result with its
// tool_call_id.
func TestQuickstartOnAChatCompletionsServer(t *testing.T) {
	var mu sync.Mutex
	var requests []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req map[string]any
		if r.URL.Path != "/v1/chat/completions" || json.Unmarshal(body, &req) != nil {
			http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		mu.Lock()
		requests = append(requests, req)
		n := len(requests)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if n == 1 {
			io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1764400000,"model":"local-model",
"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_abc","type":"function",
"function":{"name":"acme_clause-search","arguments":"{\"query\":\"confidentiality\"}"}}],"refusal":null},"logprobs":null,"finish_reason":"tool_calls"}],
"usage":{"prompt_tokens":300,"completion_tokens":20,"total_tokens":320}}`)
			return
		}
		io.WriteString(w, `{"id":"chatcmpl-2","object":"chat.completion","created":1764400001,"model":"local-model",
"choices":[{"index":0,"message":{"role":"assistant","content":"A confidentiality clause.","refusal":null},"logprobs":null,"finish_reason":"stop"}],
"usage":{"prompt_tokens":400,"completion_tokens":30,"total_tokens":430}}`)
	}))
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "")

	p, err := chooseProvider(config{provider: "openai", model: "local-model"})
	if err != nil {
		t.Fatal(err)
	}
	if err := run(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if len(requests) != 2 {
		t.Fatalf("%d requests, want 2", len(requests))
	}
	msgs := requests[1]["messages"].([]any)
	var toolMsg map[string]any
	for _, m := range msgs {
		if mm := m.(map[string]any); mm["role"] == "tool" {
			toolMsg = mm
		}
	}
	if toolMsg == nil || toolMsg["tool_call_id"] != "call_abc" || toolMsg["content"] == "" {
		t.Fatalf("second request's tool message = %v", toolMsg)
	}
	if requests[0]["model"] != "local-model" {
		t.Errorf("model = %v", requests[0]["model"])
	}
}

func TestChooseProviderRejectsUnknownChoices(t *testing.T) {
	if _, err := chooseProvider(config{provider: "llama"}); err == nil {
		t.Error("unknown provider accepted")
	}
	if _, err := chooseProvider(config{provider: "scripted", model: "x"}); err == nil {
		t.Error("-model with the scripted provider accepted")
	}
}
