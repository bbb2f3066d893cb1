package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/modelhttp/modelhttptest"
)

// localAPI is a local model API taking requests at path and answering
// each with answer, given its JSON body.
func localAPI(path string, answer func(w http.ResponseWriter, req map[string]any)) *modelhttptest.FakeAPI {
	api := &modelhttptest.FakeAPI{Path: path}
	api.Answer = func(n int, w http.ResponseWriter, _ *http.Request) { answer(w, api.Request(n)) }
	return api
}

// answerMessages answers as the Anthropic Messages API: a clause search
// first, the answer once the request carries the tool result; streamed
// when the request asks for it.
func answerMessages(w http.ResponseWriter, req map[string]any) {
	answer := !carriesToolResult(req, "tool_result")
	if req["stream"] != true {
		if answer {
			io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"local-claude","content":[{"type":"tool_use","id":"toolu_01","name":"acme_clause-search","input":{"query":"confidentiality"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":300,"output_tokens":20}}`)
			return
		}
		io.WriteString(w, `{"id":"msg_2","type":"message","role":"assistant","model":"local-claude","content":[{"type":"text","text":"A confidentiality clause."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":400,"output_tokens":30}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(name, data string) {
		io.WriteString(w, "event: "+name+"\ndata: "+data+"\n\n")
		w.(http.Flusher).Flush()
	}
	ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"local-claude","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":300,"output_tokens":1}}}`)
	if answer {
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_01","name":"acme_clause-search","input":{}}}`)
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\": \"confi"}}`)
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"dentiality\"}"}}`)
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":20}}`)
	} else {
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		ev("ping", `{"type": "ping"}`)
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"A confidentiality"}}`)
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" clause."}}`)
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":30}}`)
	}
	ev("message_stop", `{"type":"message_stop"}`)
}

// carriesToolResult reports whether a request's messages hold a tool
// result: a block or message with the given marker.
func carriesToolResult(req map[string]any, marker string) bool {
	raw, _ := json.Marshal(req["messages"])
	return strings.Contains(string(raw), marker)
}

// captureStdout runs fn with os.Stdout sent to a buffer.
func captureStdout(t *testing.T, fn func() error) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	runErr := fn()
	os.Stdout = saved
	w.Close()
	out := <-done
	r.Close()
	return string(out), runErr
}

// runQuickstart runs the quickstart with cfg, its provider pointed at api,
// and returns what it printed, having checked that it made two requests,
// each for cfg's model and streamed as cfg says.
func runQuickstart(t *testing.T, api *modelhttptest.FakeAPI, cfg config) string {
	t.Helper()
	p, err := chooseProvider(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, err := captureStdout(t, func() error { return run(t.Context(), p) })
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(api.Requests) != 2 {
		t.Fatalf("%d requests, want 2", len(api.Requests))
	}
	for i, req := range api.Requests {
		if (req["stream"] == true) != cfg.stream || req["model"] != cfg.model {
			t.Errorf("request %d: stream %v model %v", i, req["stream"], req["model"])
		}
	}
	return out
}

// TestQuickstartOnAMessagesServer runs the quickstart with -provider
// anthropic, streaming and not, against a local Messages API server.
func TestQuickstartOnAMessagesServer(t *testing.T) {
	modelhttptest.Both(t, func(t *testing.T, stream bool) {
		api := localAPI("/v1/messages", answerMessages)
		t.Setenv("ANTHROPIC_BASE_URL", modelhttptest.Server(t, api))
		t.Setenv("ANTHROPIC_API_KEY", "sk-ant-local")
		out := runQuickstart(t, api, config{provider: "anthropic", model: "local-claude", stream: stream})
		for i, h := range api.Headers {
			if h.Get("x-api-key") != "sk-ant-local" || h.Get("anthropic-version") != "2023-06-01" {
				t.Errorf("request %d headers %v", i, h)
			}
		}
		raw, _ := json.Marshal(api.Requests[1]["messages"])
		if !bytes.Contains(raw, []byte(`"tool_use_id":"toolu_01"`)) || api.Requests[1]["system"] == nil {
			t.Errorf("second request: system %v messages %s", api.Requests[1]["system"], raw)
		}
		if streamed := strings.Contains(out, "answer> A confidentiality clause.\n"); streamed != stream {
			t.Errorf("streamed answer printed: %v, want %v:\n%s", streamed, stream, out)
		}
		if !strings.Contains(out, "response:\nA confidentiality clause.") {
			t.Errorf("output lacks the response:\n%s", out)
		}
	})
}

func TestStreamNeedsAnHTTPProvider(t *testing.T) {
	if _, err := chooseProvider(config{provider: "scripted", stream: true}); err == nil {
		t.Error("-stream with the scripted provider accepted")
	}
	p, err := chooseProvider(config{provider: "anthropic"})
	if err != nil {
		t.Fatal(err)
	}
	if _, streams := p.(bindings.StreamingProvider); streams {
		t.Error("without -stream the provider streams")
	}
	if p, _ := chooseProvider(config{provider: "anthropic", stream: true}); p == nil {
		t.Error("no provider for -stream")
	} else if _, streams := p.(bindings.StreamingProvider); !streams {
		t.Error("with -stream the provider does not stream")
	}
	if p.Models()[0].ID != defaultAnthropicModel {
		t.Errorf("default model %s", p.Models()[0].ID)
	}
}
