// Package anthropic is a model provider for the Anthropic Messages API
// (POST /v1/messages, anthropic-version 2023-06-01), streaming and not.
//
// It is written with net/http and encoding/json only, like providers/openai:
// the official Go SDK would add its weight to every binary for one call,
// and the provider needs a small, stable part of the API (messages, tools,
// streaming events) that fixtures shaped as the API reference pin down.
//
// The mapping:
//   - system messages become the top-level system prompt; tool results
//     (consecutive ones merged) are tool_result blocks of one user message,
//     and an assistant's tool calls are tool_use blocks; consecutive
//     messages of one role are merged into one message, as the API wants
//     roles to alternate, and a history that begins with an answer gets
//     EarlierConversationOmitted as its first user message;
//   - tool ids (which may contain dots) are encoded into the names the API
//     allows (^[a-zA-Z0-9_-]{1,64}$) and the model's calls are mapped back;
//     tool call ids are sanitized the same way (^[a-zA-Z0-9_-]+$);
//   - stop reasons map to the finish reasons providers/openai reports:
//     end_turn and stop_sequence → "stop", max_tokens and
//     model_context_window_exceeded → "length", tool_use → "tool_calls",
//     refusal → "content_filter"; any other (pause_turn) passes as it is;
//   - usage: input tokens are input_tokens plus the cache writes and reads;
//     the cost prices cache writes at 1.25 and cache reads at 0.1 times the
//     input price of the model table, as Anthropic bills them;
//   - settings: temperature (capped at 1, the API's maximum), top_p,
//     max_tokens (required by the API: DefaultMaxTokens when unset) and
//     stop_sequences; Seed is ignored (the API has none);
//   - structured output: output_config.format json_schema, the API's
//     structured outputs, with the schema adapted as Anthropic's SDKs do
//     (every object closed with additionalProperties false, constraints the
//     API does not take moved into descriptions; the turn validates against
//     the schema as written).
//
// Answers 429, 500 and 529 (and every other 5xx) are retried with
// exponential backoff, honouring retry-after, bounded by the context; a
// stream that fails before anything was delivered is retried the same way.
// Every failure is *agents.ModelInvocationError carrying the HTTP status and
// the API's error message.
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/modelhttp"
)

// DefaultBaseURL is used when neither Options.BaseURL nor
// ANTHROPIC_BASE_URL is set.
const DefaultBaseURL = "https://api.anthropic.com"

// APIVersion is the anthropic-version header sent with every request.
const APIVersion = "2023-06-01"

// DefaultMaxTokens is max_tokens when the request's settings set no
// MaxOutputTokens (the API requires one).
const DefaultMaxTokens = 4096

// Cache price multipliers of the input price (Anthropic's prompt caching:
// 5-minute cache writes cost 1.25 times, reads 0.1 times the base input
// price).
const (
	CacheWritePriceFactor = 1.25
	CacheReadPriceFactor  = 0.1
)

// DefaultModels is the model table used when Options.Models is empty.
// Prices are US dollars per million tokens (cache writes and reads are
// priced from the input price, see CacheWritePriceFactor). The features are
// the ones the provider has: tool use, structured output
// (output_config.format) and streaming; not vision, as messages carry text
// only.
var DefaultModels = []bindings.ModelInfo{
	{ID: "claude-sonnet-4-5", Features: []string{"tool-use", "json-mode", "streaming"}, ContextWindow: 200000, InputPricePerMTok: 3.00, OutputPricePerMTok: 15.00},
	{ID: "claude-haiku-4-5", Features: []string{"tool-use", "json-mode", "streaming"}, ContextWindow: 200000, InputPricePerMTok: 1.00, OutputPricePerMTok: 5.00},
	{ID: "claude-opus-4-5", Features: []string{"tool-use", "json-mode", "streaming"}, ContextWindow: 200000, InputPricePerMTok: 5.00, OutputPricePerMTok: 25.00},
}

// Options configures a Provider. Every field is optional.
type Options struct {
	// ID is the provider id turns route to; "anthropic" when empty.
	ID string
	// BaseURL is the API root (without /v1); ANTHROPIC_BASE_URL, then
	// DefaultBaseURL, when empty. A root ending in /v1 is accepted too.
	BaseURL string
	// APIKey is sent as x-api-key; ANTHROPIC_API_KEY when empty.
	APIKey string
	// HTTPClient sends the requests; http.DefaultClient when nil.
	HTTPClient *http.Client
	// Models is the model table: capability features and prices. Cost is
	// computed from it. DefaultModels when empty.
	Models []bindings.ModelInfo
	// MaxRetries bounds the retries of a 429, 5xx or 529 answer (3 when 0;
	// -1 disables retries).
	MaxRetries int
	// MinBackoff and MaxBackoff bound the wait between retries when the
	// answer has no retry-after (250 ms and 10 s when zero).
	MinBackoff, MaxBackoff time.Duration
	// MaxTokens is max_tokens when a request sets no MaxOutputTokens
	// (DefaultMaxTokens when 0).
	MaxTokens int
}

// Provider talks to the Messages API. It is safe for concurrent use.
type Provider struct {
	c         *modelhttp.Client
	maxTokens int
}

var _ bindings.StreamingProvider = (*Provider)(nil)

// New returns a Provider. A nil opts is the zero Options.
func New(opts *Options) *Provider {
	var o Options
	if opts != nil {
		o = *opts
	}
	base := modelhttp.Setting(o.BaseURL, "ANTHROPIC_BASE_URL", DefaultBaseURL)
	base = strings.TrimSuffix(strings.TrimRight(base, "/"), "/v1")
	apiKey := modelhttp.Setting(o.APIKey, "ANTHROPIC_API_KEY", "")
	p := &Provider{maxTokens: o.MaxTokens}
	if p.maxTokens <= 0 {
		p.maxTokens = DefaultMaxTokens
	}
	p.c = modelhttp.NewClient(modelhttp.Config{
		ID: o.ID, DefaultID: "anthropic", Endpoint: base + "/v1/messages", HTTPClient: o.HTTPClient,
		Models: o.Models, DefaultModels: DefaultModels,
		MaxRetries: o.MaxRetries, MinBackoff: o.MinBackoff, MaxBackoff: o.MaxBackoff,
		Header: func(h http.Header, _ bindings.GenerateRequest) {
			h.Set("anthropic-version", APIVersion)
			if apiKey != "" {
				h.Set("x-api-key", apiKey)
			}
		},
	})
	return p
}

// ID returns the provider id.
func (p *Provider) ID() string { return p.c.ID() }

// Models returns a copy of the model table.
func (p *Provider) Models() []bindings.ModelInfo { return p.c.Models() }

// Generate sends one Messages request and returns the model's text, tool
// calls and usage, with the cost priced from the model table.
func (p *Provider) Generate(ctx context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	enc := newEncoder(req.Tools)
	return p.c.Generate(ctx, req, p.encodeRequest(req, enc, false), func(resp *http.Response) (bindings.GenerateResponse, error) {
		return p.readResponse(ctx, req, enc, resp)
	})
}

// readResponse decodes a non-streamed answer.
func (p *Provider) readResponse(ctx context.Context, req bindings.GenerateRequest, enc encoder, resp *http.Response) (bindings.GenerateResponse, error) {
	var m message
	if err := p.c.ReadJSON(ctx, req.Model, resp, &m); err != nil {
		return bindings.GenerateResponse{}, err
	}
	if m.Type == "error" && m.Error != nil {
		return bindings.GenerateResponse{}, p.c.Fail(req.Model, resp.StatusCode, m.Error.Message, nil)
	}
	out, err := p.assemble(req, enc, m)
	if err != nil {
		return bindings.GenerateResponse{}, p.c.Fail(req.Model, resp.StatusCode, err.Error(), err)
	}
	return out, nil
}

var errNoContent = errors.New("the message has neither text nor tool calls")

// assemble turns a message into the response Generate and GenerateStream
// return.
func (p *Provider) assemble(req bindings.GenerateRequest, enc encoder, m message) (bindings.GenerateResponse, error) {
	out := bindings.GenerateResponse{FinishReason: finishReason(m.StopReason), Model: m.Model}
	if out.Model == "" {
		out.Model = req.Model
	}
	var text strings.Builder
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := compact(b.Input)
			out.ToolCalls = append(out.ToolCalls, bindings.ToolCall{ID: b.ID, Name: enc.names.Decode(b.Name), Arguments: args})
		}
	}
	out.Text = text.String()
	u := m.Usage
	out.Usage = bindings.Usage{
		InputTokens:  u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
		OutputTokens: u.OutputTokens,
	}
	if mi, ok := p.c.Model(req.Model); ok {
		in := float64(u.InputTokens) + CacheWritePriceFactor*float64(u.CacheCreationInputTokens) + CacheReadPriceFactor*float64(u.CacheReadInputTokens)
		out.Usage.CostUsd = (in*mi.InputPricePerMTok + float64(u.OutputTokens)*mi.OutputPricePerMTok) / 1e6
	}
	if out.Text == "" && len(out.ToolCalls) == 0 && out.FinishReason != "stop" && out.FinishReason != "length" {
		return out, errors.New(errNoContent.Error() + " (stop reason " + m.StopReason + ")")
	}
	return out, nil
}

// compact returns a tool_use input as compact JSON ({} when empty).
func compact(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage(`{}`)
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// finishReason maps a stop reason to the finish reason vocabulary of
// providers/openai.
func finishReason(stop string) string {
	switch stop {
	case "end_turn", "stop_sequence":
		return "stop"
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return stop
}
