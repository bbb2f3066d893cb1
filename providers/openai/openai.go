// Package openai is a model provider for the OpenAI Chat Completions API and
// the many servers that speak it (vLLM, Ollama, llama.cpp, LiteLLM).
//
// It is written with net/http and encoding/json only. Tool ids (which may
// contain dots) are encoded into the function names the API allows
// (^[a-zA-Z0-9_-]{1,64}$) and the model's calls are mapped back to the ids.
// Answers 429 and 5xx are retried with exponential backoff, honouring
// Retry-After, bounded by the context; every other failure is
// *agents.ModelInvocationError carrying the HTTP status and the API's error
// message.
//
// The provider is a bindings.StreamingProvider (see GenerateStream).
// Generation settings map to temperature, top_p, stop, seed and
// max_completion_tokens (max_tokens with Options.LegacyMaxTokens); none is
// ignored, though a server may ignore what it does not support (seed,
// say). An output schema is sent as response_format json_schema, strict
// when the schema meets strict mode's rules.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/modelhttp"
)

// DefaultBaseURL is used when neither Options.BaseURL nor OPENAI_BASE_URL
// is set.
const DefaultBaseURL = "https://api.openai.com/v1"

// DefaultModels is the model table used when Options.Models is empty.
// Prices are US dollars per million tokens. The features are the ones the
// provider has: tool calls, structured output (response_format
// json_schema) and streaming; not vision, as messages carry text only.
var DefaultModels = []bindings.ModelInfo{
	{ID: "gpt-4o-mini", Features: []string{"tool-use", "json-mode", "streaming"}, ContextWindow: 128000, InputPricePerMTok: 0.15, OutputPricePerMTok: 0.60},
	{ID: "gpt-4o", Features: []string{"tool-use", "json-mode", "streaming"}, ContextWindow: 128000, InputPricePerMTok: 2.50, OutputPricePerMTok: 10.00},
}

// Options configures a Provider. Every field is optional.
type Options struct {
	// ID is the provider id turns route to; "openai" when empty.
	ID string
	// BaseURL is the API root up to and including /v1; OPENAI_BASE_URL,
	// then DefaultBaseURL, when empty.
	BaseURL string
	// APIKey is sent as a bearer token; OPENAI_API_KEY when empty. A server
	// that needs no key (a local vLLM or Ollama) works without one.
	APIKey string
	// HTTPClient sends the requests; http.DefaultClient when nil.
	HTTPClient *http.Client
	// Models is the model table: capability features and prices. Cost is
	// computed from it. DefaultModels when empty.
	Models []bindings.ModelInfo
	// MaxRetries bounds the retries of a 429 or 5xx answer (3 when 0; -1
	// disables retries).
	MaxRetries int
	// MinBackoff and MaxBackoff bound the wait between retries when the
	// answer has no Retry-After (250 ms and 10 s when zero).
	MinBackoff, MaxBackoff time.Duration
	// Organization, when set, is sent as OpenAI-Organization.
	Organization string
	// LegacyMaxTokens sends ModelSettings.MaxOutputTokens as max_tokens
	// (what older servers know) instead of max_completion_tokens (what the
	// API documents, and what its reasoning models require).
	LegacyMaxTokens bool
}

// Provider talks to a Chat Completions endpoint. It is safe for concurrent
// use.
type Provider struct {
	c *modelhttp.Client

	legacyMaxTokens bool
}

var _ bindings.StreamingProvider = (*Provider)(nil)

// New returns a Provider. A nil opts is the zero Options.
func New(opts *Options) *Provider {
	var o Options
	if opts != nil {
		o = *opts
	}
	base := modelhttp.Setting(o.BaseURL, "OPENAI_BASE_URL", DefaultBaseURL)
	apiKey, org := modelhttp.Setting(o.APIKey, "OPENAI_API_KEY", ""), o.Organization
	return &Provider{
		c: modelhttp.NewClient(modelhttp.Config{
			ID: o.ID, DefaultID: "openai", Endpoint: strings.TrimRight(base, "/") + "/chat/completions", HTTPClient: o.HTTPClient,
			Models: o.Models, DefaultModels: DefaultModels,
			MaxRetries: o.MaxRetries, MinBackoff: o.MinBackoff, MaxBackoff: o.MaxBackoff,
			Header: func(h http.Header, req bindings.GenerateRequest) {
				if apiKey != "" {
					h.Set("Authorization", "Bearer "+apiKey)
				}
				if org != "" {
					h.Set("OpenAI-Organization", org)
				}
				if req.RequestID != "" {
					// Servers that support it use this to deduplicate retries.
					h.Set("Idempotency-Key", req.RequestID)
				}
			},
		}),
		legacyMaxTokens: o.LegacyMaxTokens,
	}
}

// ID returns the provider id.
func (p *Provider) ID() string { return p.c.ID() }

// Models returns a copy of the model table.
func (p *Provider) Models() []bindings.ModelInfo { return p.c.Models() }

// Generate sends one Chat Completions request and returns the model's text,
// tool calls and usage, with the cost priced from the model table.
func (p *Provider) Generate(ctx context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	names := modelhttp.ToolNames(req.Tools)
	return p.c.Generate(ctx, req, p.encodeRequest(req, names, false), func(resp *http.Response) (bindings.GenerateResponse, error) {
		return p.readResponse(ctx, req, names, resp)
	})
}

// readResponse decodes a non-streamed answer.
func (p *Provider) readResponse(ctx context.Context, req bindings.GenerateRequest, names modelhttp.NameMap, resp *http.Response) (bindings.GenerateResponse, error) {
	var cr chatResponse
	if err := p.c.ReadJSON(ctx, req.Model, resp, &cr); err != nil {
		return bindings.GenerateResponse{}, err
	}
	if len(cr.Choices) == 0 {
		return bindings.GenerateResponse{}, p.c.Fail(req.Model, resp.StatusCode, "the response has no choices", nil)
	}
	out, err := p.assemble(req, names, cr.Choices[0], cr.Model, cr.Usage)
	if err != nil {
		return bindings.GenerateResponse{}, p.c.Fail(req.Model, resp.StatusCode, err.Error(), err)
	}
	return out, nil
}

// assemble turns a choice into the response Generate and GenerateStream
// return.
func (p *Provider) assemble(req bindings.GenerateRequest, names modelhttp.NameMap, c choice, model string, u usage) (bindings.GenerateResponse, error) {
	out, err := decodeChoice(c, names)
	if err != nil {
		return out, err
	}
	out.Model = model
	if out.Model == "" {
		out.Model = req.Model
	}
	out.Usage = bindings.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if m, ok := p.c.Model(req.Model); ok {
		out.Usage.CostUsd = m.Cost(out.Usage.InputTokens, out.Usage.OutputTokens)
	}
	return out, nil
}

var errNoContent = errors.New("the choice has neither content nor tool calls")

func decodeChoice(c choice, names modelhttp.NameMap) (bindings.GenerateResponse, error) {
	out := bindings.GenerateResponse{FinishReason: c.FinishReason}
	if c.Message.Content != nil {
		out.Text = *c.Message.Content
	}
	if out.Text == "" && c.Message.Refusal != nil {
		out.Text = *c.Message.Refusal
	}
	for _, tc := range c.Message.ToolCalls {
		args := json.RawMessage(tc.Function.Arguments)
		if strings.TrimSpace(tc.Function.Arguments) == "" {
			args = json.RawMessage(`{}`)
		}
		out.ToolCalls = append(out.ToolCalls, bindings.ToolCall{ID: tc.ID, Name: names.Decode(tc.Function.Name), Arguments: args})
	}
	if out.Text == "" && len(out.ToolCalls) == 0 && c.FinishReason != "stop" && c.FinishReason != "length" {
		return out, fmt.Errorf("%w (finish reason %q)", errNoContent, c.FinishReason)
	}
	return out, nil
}
