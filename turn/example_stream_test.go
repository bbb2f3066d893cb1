package turn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// wordStreamer streams a fixed answer word by word, as a
// bindings.StreamingProvider over a real API (providers/openai,
// providers/anthropic) streams tokens.
type wordStreamer struct{ answer string }

func (wordStreamer) ID() string { return "words" }
func (wordStreamer) Models() []bindings.ModelInfo {
	return []bindings.ModelInfo{{ID: "words-1", Features: []string{"json-mode", "streaming"}}}
}
func (w wordStreamer) Generate(ctx context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	return w.GenerateStream(ctx, req, nil)
}
func (w wordStreamer) GenerateStream(_ context.Context, req bindings.GenerateRequest, onDelta func(bindings.Delta)) (bindings.GenerateResponse, error) {
	for _, word := range strings.SplitAfter(w.answer, " ") {
		if onDelta != nil {
			onDelta(bindings.Delta{Text: word})
		}
	}
	return bindings.GenerateResponse{Text: w.answer, FinishReason: "stop", Model: req.Model}, nil
}

func ExampleEvents() {
	ctx := context.Background()
	temperature := 0.2
	a, err := agent.Define(agent.Spec{
		ID: "acme.summarizer", Version: "1.0.0", Name: "Summarizer",
		Instructions:  "Summarize the contract as JSON.",
		Capabilities:  []agent.Capability{{Needs: []agent.Need{{Feature: "json-mode"}}}},
		ModelSettings: &agent.ModelSettings{Temperature: &temperature},
		Output:        json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}`),
	})
	if err != nil {
		panic(err)
	}
	store := memstore.New(nil)
	conv, _ := store.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "acme", AgentID: a.ID, AgentVersion: a.Version})
	b := turn.Bindings{
		Providers: bindings.Providers{wordStreamer{answer: `{"title": "Mutual NDA"}`}}, Tools: registry.NewTools(),
		Conversations: store, Snapshots: store, Runs: store, Journal: store,
	}
	in := turn.Input{TenantID: "acme", Agent: a, ConversationID: conv.ID, UserMessage: "Summarize the NDA."}
	for e, err := range turn.Events(ctx, in, b) {
		if err != nil {
			panic(err)
		}
		switch e := e.(type) {
		case turn.ModelCallDeltaEvent:
			fmt.Printf("[%s]", e.Delta.Text) // the answer as it arrives
		case turn.TurnCompletedEvent:
			fmt.Println()
			fmt.Println(e.Result.Status, string(e.Result.Response.Output))
		}
	}
	// Output:
	// [{"title": ]["Mutual ][NDA"}]
	// completed {"title":"Mutual NDA"}
}
