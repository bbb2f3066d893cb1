package journaltest

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// KeyedProvider is a bindings.Provider ("keyed", model "keyed-1" with
// tool use) that answers a model call by its journal step — the request
// id without the run's prefix, "agent-loop/1/model-call" — not by call
// order, so a model call repeated after a crash gets the same answer. A
// step without an answer is *agents.ModelInvocationError. It counts the
// calls per request id in Calls; a KeyedProvider is not copied once used.
type KeyedProvider struct {
	mu      sync.Mutex
	Answers map[string]bindings.GenerateResponse // step key → answer
	Calls   map[string]int                       // request id → calls
}

// ID implements bindings.Provider.
func (p *KeyedProvider) ID() string { return "keyed" }

// Models implements bindings.Provider.
func (p *KeyedProvider) Models() []bindings.ModelInfo {
	return []bindings.ModelInfo{{ID: "keyed-1", Features: []string{"tool-use"}}}
}

// Generate implements bindings.Provider: the answer of the call's step.
func (p *KeyedProvider) Generate(_ context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	key := strings.TrimPrefix(req.RequestID, req.RunID+"/")
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.Calls == nil {
		p.Calls = map[string]int{}
	}
	p.Calls[req.RequestID]++
	a, ok := p.Answers[key]
	if !ok {
		return bindings.GenerateResponse{}, &agents.ModelInvocationError{Provider: "keyed", Model: req.Model, Message: "no answer for " + key}
	}
	return a, nil
}

// ScenarioProvider answers the crash scenario the turn's and the stores'
// crash tests drive: a call of acme.clause-search, then one of
// acme.send-email (behind an approval), then the answer.
func ScenarioProvider() *KeyedProvider {
	return &KeyedProvider{Calls: map[string]int{}, Answers: map[string]bindings.GenerateResponse{
		"agent-loop/1/model-call": {ToolCalls: []bindings.ToolCall{{ID: "call_1", Name: "acme.clause-search", Arguments: json.RawMessage(`{"query":"confidentiality"}`)}},
			Usage: bindings.Usage{InputTokens: 100, OutputTokens: 10, CostUsd: 0.001}},
		"agent-loop/2/model-call": {ToolCalls: []bindings.ToolCall{{ID: "call_2", Name: "acme.send-email", Arguments: json.RawMessage(`{"to":"legal@globex.test","subject":"NDA","body":"Draft."}`)}},
			Usage: bindings.Usage{InputTokens: 150, OutputTokens: 15, CostUsd: 0.0015}},
		"agent-loop/3/model-call": {Text: "Searched the library and sent the draft.", Usage: bindings.Usage{InputTokens: 200, OutputTokens: 20, CostUsd: 0.002}},
	}}
}
