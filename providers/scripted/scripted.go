// Package scripted is a deterministic model provider for tests and
// examples: it plays a script of responses — text, tool calls, usage and
// cost, or an error — one per Generate call, records every request it got,
// and fails loudly when the script runs out.
package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// DefaultID and DefaultModel name the provider and its model when Options
// leaves them empty.
const (
	DefaultID    = "scripted"
	DefaultModel = "scripted-1"
)

// Response is one scripted model answer. With Err set, Generate returns
// Err (wrapped in *agents.ModelInvocationError when it carries no code)
// instead of an answer.
type Response struct {
	Text         string
	ToolCalls    []bindings.ToolCall
	Usage        bindings.Usage
	FinishReason string
	Err          error
}

// Say returns a text answer.
func Say(text string) Response { return Response{Text: text, FinishReason: "stop"} }

// Call returns an answer that calls tool with args (marshalled to JSON;
// a json.RawMessage or []byte is used as is) under call id id.
func Call(id, tool string, args any) Response {
	return Response{ToolCalls: []bindings.ToolCall{ToolCall(id, tool, args)}, FinishReason: "tool_calls"}
}

// ToolCall builds one tool call; see Call.
func ToolCall(id, tool string, args any) bindings.ToolCall {
	var raw json.RawMessage
	switch a := args.(type) {
	case json.RawMessage:
		raw = slices.Clone(a)
	case []byte:
		raw = slices.Clone(a)
	case nil:
		raw = json.RawMessage(`{}`)
	default:
		b, err := json.Marshal(a)
		if err != nil {
			panic(fmt.Sprintf("scripted.ToolCall: arguments do not marshal: %v", err))
		}
		raw = b
	}
	return bindings.ToolCall{ID: id, Name: tool, Arguments: raw}
}

// WithUsage returns r with its usage set.
func (r Response) WithUsage(inputTokens, outputTokens int, costUsd float64) Response {
	r.Usage = bindings.Usage{InputTokens: inputTokens, OutputTokens: outputTokens, CostUsd: costUsd}
	return r
}

// Fataler is the part of testing.TB that Options.Fatal uses.
type Fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Options configures a Provider. A nil *Options is the zero Options.
type Options struct {
	// ID is the provider id (DefaultID when empty).
	ID string
	// Models are the models served (one model DefaultModel with the
	// features tool-use and json-mode when empty).
	Models []bindings.ModelInfo
	// Loop replays the script from the start when it runs out, instead of
	// failing (for benchmarks).
	Loop bool
	// DiscardRequests skips recording requests (for benchmarks).
	DiscardRequests bool
	// Fatal, when set, is called with the exhaustion message before
	// Generate returns its error: pass a *testing.T to stop the test. As
	// with t.Fatalf, this is valid only when the turn runs on the test's
	// goroutine.
	Fatal Fataler
}

// Provider plays a script. It is safe for concurrent use: concurrent calls
// take the script's responses in the order they acquire it.
type Provider struct {
	id      string
	models  []bindings.ModelInfo
	opts    Options
	mu      sync.Mutex
	script  []Response
	next    int
	calls   int
	records []bindings.GenerateRequest
}

var _ bindings.Provider = (*Provider)(nil)

// New returns a provider that answers with script, in order.
func New(script []Response, opts *Options) *Provider {
	var o Options
	if opts != nil {
		o = *opts
	}
	p := &Provider{id: o.ID, models: cloneModels(o.Models), opts: o, script: slices.Clone(script)}
	if p.id == "" {
		p.id = DefaultID
	}
	if len(p.models) == 0 {
		p.models = []bindings.ModelInfo{{ID: DefaultModel, Features: []string{"tool-use", "json-mode"}, ContextWindow: 128000}}
	}
	return p
}

// ID returns the provider id.
func (p *Provider) ID() string { return p.id }

// Models returns a copy of the models served.
func (p *Provider) Models() []bindings.ModelInfo { return cloneModels(p.models) }

// Append adds responses to the end of the script.
func (p *Provider) Append(rs ...Response) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.script = append(p.script, rs...)
}

// Generate returns the next scripted response. A done ctx, an unknown
// model or an exhausted script is *agents.ModelInvocationError; the last
// names how many responses the script had.
func (p *Provider) Generate(ctx context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	if err := ctx.Err(); err != nil {
		return bindings.GenerateResponse{}, &agents.ModelInvocationError{Provider: p.id, Model: req.Model, Err: err}
	}
	if !slices.ContainsFunc(p.models, func(m bindings.ModelInfo) bool { return m.ID == req.Model }) {
		return bindings.GenerateResponse{}, &agents.ModelInvocationError{Provider: p.id, Model: req.Model, Message: "model not served by this provider"}
	}
	p.mu.Lock()
	p.calls++
	if !p.opts.DiscardRequests {
		p.records = append(p.records, cloneRequest(req))
	}
	if p.next >= len(p.script) && p.opts.Loop && len(p.script) > 0 {
		p.next = 0
	}
	if p.next >= len(p.script) {
		n, calls := len(p.script), p.calls
		p.mu.Unlock()
		msg := fmt.Sprintf("script exhausted: call %d, but the script has %d responses", calls, n)
		if p.opts.Fatal != nil {
			p.opts.Fatal.Helper()
			p.opts.Fatal.Fatalf("scripted provider %s: %s", p.id, msg)
		}
		return bindings.GenerateResponse{}, &agents.ModelInvocationError{Provider: p.id, Model: req.Model, Message: msg}
	}
	r := p.script[p.next]
	p.next++
	p.mu.Unlock()
	if r.Err != nil {
		if agents.CodeOf(r.Err) != "" {
			return bindings.GenerateResponse{}, r.Err
		}
		return bindings.GenerateResponse{}, &agents.ModelInvocationError{Provider: p.id, Model: req.Model, Err: r.Err}
	}
	out := bindings.GenerateResponse{
		Text: r.Text, ToolCalls: cloneCalls(r.ToolCalls), FinishReason: r.FinishReason, Model: req.Model, Usage: r.Usage,
	}
	if out.FinishReason == "" {
		out.FinishReason = "stop"
		if len(out.ToolCalls) > 0 {
			out.FinishReason = "tool_calls"
		}
	}
	return out, nil
}

// Requests returns copies of the requests received, in order.
func (p *Provider) Requests() []bindings.GenerateRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]bindings.GenerateRequest, len(p.records))
	for i, r := range p.records {
		out[i] = cloneRequest(r)
	}
	return out
}

// Calls returns how many times Generate was called (including failed
// calls).
func (p *Provider) Calls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// Remaining returns how many scripted responses are left.
func (p *Provider) Remaining() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.script) - p.next
}

func cloneModels(ms []bindings.ModelInfo) []bindings.ModelInfo {
	out := slices.Clone(ms)
	for i := range out {
		out[i].Features = slices.Clone(out[i].Features)
	}
	return out
}

func cloneCalls(cs []bindings.ToolCall) []bindings.ToolCall {
	if cs == nil {
		return nil
	}
	out := make([]bindings.ToolCall, len(cs))
	for i, c := range cs {
		c.Arguments = slices.Clone(c.Arguments)
		out[i] = c
	}
	return out
}

func cloneRequest(r bindings.GenerateRequest) bindings.GenerateRequest {
	msgs := make([]bindings.ChatMessage, len(r.Messages))
	for i, m := range r.Messages {
		m.ToolCalls = cloneCalls(m.ToolCalls)
		msgs[i] = m
	}
	r.Messages = msgs
	tools := make([]bindings.ToolDefinition, len(r.Tools))
	for i, t := range r.Tools {
		t.InputSchema = slices.Clone(t.InputSchema)
		tools[i] = t
	}
	r.Tools = tools
	return r
}
