package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kindgi/agents/internal/modelhttp/modelhttptest"
)

// answerChat answers as the Chat Completions API: a clause search first,
// the answer once the request carries the tool result; streamed when the
// request asks for it.
func answerChat(w http.ResponseWriter, req map[string]any) {
	answer := !carriesToolResult(req, `"role":"tool"`)
	if req["stream"] != true {
		if answer {
			io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1764400000,"model":"local-model",
"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_abc","type":"function",
"function":{"name":"acme_clause-search","arguments":"{\"query\":\"confidentiality\"}"}}],"refusal":null},"logprobs":null,"finish_reason":"tool_calls"}],
"usage":{"prompt_tokens":300,"completion_tokens":20,"total_tokens":320}}`)
			return
		}
		io.WriteString(w, `{"id":"chatcmpl-2","object":"chat.completion","created":1764400001,"model":"local-model",
"choices":[{"index":0,"message":{"role":"assistant","content":"A confidentiality clause.","refusal":null},"logprobs":null,"finish_reason":"stop"}],
"usage":{"prompt_tokens":400,"completion_tokens":30,"total_tokens":430}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta, finish string) {
		io.WriteString(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764400000,"model":"local-model","choices":[{"index":0,"delta":`+delta+`,"logprobs":null,"finish_reason":`+finish+`}],"usage":null}`+"\n\n")
		w.(http.Flusher).Flush()
	}
	if answer {
		chunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"name":"acme_clause-search","arguments":""}}]}`, "null")
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"query\":\"conf"}}]}`, "null")
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"identiality\"}"}}]}`, "null")
		chunk(`{}`, `"tool_calls"`)
	} else {
		chunk(`{"role":"assistant","content":""}`, "null")
		chunk(`{"content":"A confidentiality"}`, "null")
		chunk(`{"content":" clause."}`, "null")
		chunk(`{}`, `"stop"`)
	}
	io.WriteString(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764400000,"model":"local-model","choices":[],"usage":{"prompt_tokens":300,"completion_tokens":20,"total_tokens":320}}`+"\n\ndata: [DONE]\n\n")
}

// TestQuickstartOnAChatCompletionsServer runs the quickstart with
// -provider openai, streaming and not, against a local server speaking
// the Chat Completions API: two requests, the second carrying the tool
// result with its tool_call_id; streamed, the answer is printed as it
// arrives.
func TestQuickstartOnAChatCompletionsServer(t *testing.T) {
	modelhttptest.Both(t, func(t *testing.T, stream bool) {
		api := localAPI("/v1/chat/completions", answerChat)
		t.Setenv("OPENAI_BASE_URL", modelhttptest.Server(t, api)+"/v1")
		t.Setenv("OPENAI_API_KEY", "")
		out := runQuickstart(t, api, config{provider: "openai", model: "local-model", stream: stream})
		var toolMsg map[string]any
		for _, m := range api.Requests[1]["messages"].([]any) {
			if mm := m.(map[string]any); mm["role"] == "tool" {
				toolMsg = mm
			}
		}
		if toolMsg == nil || toolMsg["tool_call_id"] != "call_abc" || toolMsg["content"] == "" {
			t.Fatalf("second request's tool message = %v", toolMsg)
		}
		if streamed := strings.Contains(out, "answer> A confidentiality clause.\n"); streamed != stream {
			t.Errorf("streamed answer printed: %v, want %v:\n%s", streamed, stream, out)
		}
	})
}

func TestChooseProviderRejectsUnknownChoices(t *testing.T) {
	if _, err := chooseProvider(config{provider: "llama"}); err == nil {
		t.Error("unknown provider accepted")
	}
	if _, err := chooseProvider(config{provider: "scripted", model: "x"}); err == nil {
		t.Error("-model with the scripted provider accepted")
	}
}
