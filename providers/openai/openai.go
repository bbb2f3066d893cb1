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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	agents "github.com/kindgi/agents"
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
	id         string
	endpoint   string
	apiKey     string
	org        string
	client     *http.Client
	models     []bindings.ModelInfo
	maxRetries int
	minBackoff time.Duration
	maxBackoff time.Duration

	legacyMaxTokens bool
}

var _ bindings.StreamingProvider = (*Provider)(nil)

// New returns a Provider. A nil opts is the zero Options.
func New(opts *Options) *Provider {
	var o Options
	if opts != nil {
		o = *opts
	}
	p := &Provider{
		id:         o.ID,
		apiKey:     o.APIKey,
		org:        o.Organization,
		client:     o.HTTPClient,
		models:     append([]bindings.ModelInfo(nil), o.Models...),
		maxRetries: o.MaxRetries,
		minBackoff: o.MinBackoff,
		maxBackoff: o.MaxBackoff,

		legacyMaxTokens: o.LegacyMaxTokens,
	}
	if p.id == "" {
		p.id = "openai"
	}
	base := o.BaseURL
	if base == "" {
		base = os.Getenv("OPENAI_BASE_URL")
	}
	if base == "" {
		base = DefaultBaseURL
	}
	p.endpoint = strings.TrimRight(base, "/") + "/chat/completions"
	if p.apiKey == "" {
		p.apiKey = os.Getenv("OPENAI_API_KEY")
	}
	if p.client == nil {
		p.client = http.DefaultClient
	}
	if len(p.models) == 0 {
		p.models = append(p.models, DefaultModels...)
	}
	switch {
	case p.maxRetries == 0:
		p.maxRetries = 3
	case p.maxRetries < 0:
		p.maxRetries = 0
	}
	if p.minBackoff <= 0 {
		p.minBackoff = 250 * time.Millisecond
	}
	if p.maxBackoff <= 0 {
		p.maxBackoff = 10 * time.Second
	}
	return p
}

// ID returns the provider id.
func (p *Provider) ID() string { return p.id }

// Models returns a copy of the model table.
func (p *Provider) Models() []bindings.ModelInfo {
	return append([]bindings.ModelInfo(nil), p.models...)
}

func (p *Provider) model(id string) (bindings.ModelInfo, bool) {
	for _, m := range p.models {
		if m.ID == id {
			return m, true
		}
	}
	return bindings.ModelInfo{}, false
}

// Generate sends one Chat Completions request and returns the model's text,
// tool calls and usage, with the cost priced from the model table.
func (p *Provider) Generate(ctx context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	names := newNameMap(req.Tools)
	body, err := json.Marshal(p.encodeRequest(req, names, false))
	if err != nil {
		return bindings.GenerateResponse{}, p.fail(req.Model, 0, "encoding the request", err)
	}
	var out bindings.GenerateResponse
	err = p.withRetries(ctx, req, body, false, func(resp *http.Response) (bool, error) {
		var err error
		out, err = p.readResponse(ctx, req, names, resp)
		return false, err
	})
	if err != nil {
		return bindings.GenerateResponse{}, err
	}
	return out, nil
}

// readResponse decodes a non-streamed answer.
func (p *Provider) readResponse(ctx context.Context, req bindings.GenerateRequest, names nameMap, resp *http.Response) (bindings.GenerateResponse, error) {
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		if ctx.Err() != nil {
			return bindings.GenerateResponse{}, p.fail(req.Model, 0, "request cancelled", ctx.Err())
		}
		return bindings.GenerateResponse{}, p.fail(req.Model, resp.StatusCode, "reading the response", err)
	}
	var cr chatResponse
	if err := json.Unmarshal(raw, &cr); err != nil {
		return bindings.GenerateResponse{}, p.fail(req.Model, resp.StatusCode, "decoding the response", err)
	}
	if len(cr.Choices) == 0 {
		return bindings.GenerateResponse{}, p.fail(req.Model, resp.StatusCode, "the response has no choices", nil)
	}
	out, err := p.assemble(req, names, cr.Choices[0], cr.Model, cr.Usage)
	if err != nil {
		return bindings.GenerateResponse{}, p.fail(req.Model, resp.StatusCode, err.Error(), err)
	}
	return out, nil
}

// assemble turns a choice into the response Generate and GenerateStream
// return.
func (p *Provider) assemble(req bindings.GenerateRequest, names nameMap, c choice, model string, u usage) (bindings.GenerateResponse, error) {
	out, err := decodeChoice(c, names)
	if err != nil {
		return out, err
	}
	out.Model = model
	if out.Model == "" {
		out.Model = req.Model
	}
	out.Usage = bindings.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if m, ok := p.model(req.Model); ok {
		out.Usage.CostUsd = m.Cost(out.Usage.InputTokens, out.Usage.OutputTokens)
	}
	return out, nil
}

// withRetries posts body until an attempt succeeds, retrying 429 and 5xx
// answers (and what read reports as retryable) up to MaxRetries times. A
// 2xx answer is handed to read, which consumes its body.
func (p *Provider) withRetries(ctx context.Context, req bindings.GenerateRequest, body []byte, stream bool, read func(*http.Response) (retryable bool, err error)) error {
	return modelhttp.Retry(ctx, p.maxRetries, p.minBackoff, p.maxBackoff,
		func() (bool, string, error) { return p.attempt(ctx, req, body, stream, read) },
		func(last error) error {
			var mi *agents.ModelInvocationError
			if errors.As(last, &mi) {
				return p.fail(req.Model, mi.Status, mi.Message+" (retry cancelled)", ctx.Err())
			}
			return p.fail(req.Model, 0, "retry cancelled", ctx.Err())
		})
}

// attempt sends body once.
func (p *Provider) attempt(ctx context.Context, req bindings.GenerateRequest, body []byte, stream bool, read func(*http.Response) (bool, error)) (retryable bool, retryAfter string, err error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, bytes.NewReader(body))
	if err != nil {
		return false, "", p.fail(req.Model, 0, "building the request", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if stream {
		hreq.Header.Set("Accept", "text/event-stream")
	} else {
		hreq.Header.Set("Accept", "application/json")
	}
	if p.apiKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+p.apiKey)
	}
	if p.org != "" {
		hreq.Header.Set("OpenAI-Organization", p.org)
	}
	if req.RequestID != "" {
		// Servers that support it use this to deduplicate retries.
		hreq.Header.Set("Idempotency-Key", req.RequestID)
	}
	resp, err := p.client.Do(hreq)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return false, "", p.fail(req.Model, 0, "request cancelled", ctxErr)
		}
		return false, "", p.fail(req.Model, 0, "sending the request", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		retryable, err := read(resp)
		return retryable, "", err
	}
	raw, readErr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if readErr != nil && ctx.Err() != nil {
		return false, "", p.fail(req.Model, resp.StatusCode, "request cancelled", ctx.Err())
	}
	retryable = resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
	return retryable, resp.Header.Get("Retry-After"), p.fail(req.Model, resp.StatusCode, apiErrorMessage(raw, resp.Status), nil)
}

// parseRetryAfter reads a Retry-After header.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	return modelhttp.ParseRetryAfter(v, now)
}

func (p *Provider) fail(model string, status int, msg string, cause error) error {
	return &agents.ModelInvocationError{Provider: p.id, Model: model, Status: status, Message: msg, Err: cause}
}

// apiErrorMessage extracts error.message from an API error body, falling
// back to the status line and a prefix of the body.
func apiErrorMessage(raw []byte, status string) string {
	var e struct {
		Error *apiError `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Error != nil && e.Error.Message != "" {
		return e.Error.Message
	}
	body := strings.TrimSpace(string(raw))
	if len(body) > 200 {
		body = body[:200] + "…"
	}
	if body == "" {
		return status
	}
	return status + ": " + body
}

var errNoContent = errors.New("the choice has neither content nor tool calls")

func decodeChoice(c choice, names nameMap) (bindings.GenerateResponse, error) {
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
		out.ToolCalls = append(out.ToolCalls, bindings.ToolCall{ID: tc.ID, Name: names.decode(tc.Function.Name), Arguments: args})
	}
	if out.Text == "" && len(out.ToolCalls) == 0 && c.FinishReason != "stop" && c.FinishReason != "length" {
		return out, fmt.Errorf("%w (finish reason %q)", errNoContent, c.FinishReason)
	}
	return out, nil
}
