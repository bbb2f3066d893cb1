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
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// DefaultBaseURL is used when neither Options.BaseURL nor OPENAI_BASE_URL
// is set.
const DefaultBaseURL = "https://api.openai.com/v1"

// DefaultModels is the model table used when Options.Models is empty.
// Prices are US dollars per million tokens.
var DefaultModels = []bindings.ModelInfo{
	{ID: "gpt-4o-mini", Features: []string{"tool-use", "json-mode", "vision", "streaming"}, ContextWindow: 128000, InputPricePerMTok: 0.15, OutputPricePerMTok: 0.60},
	{ID: "gpt-4o", Features: []string{"tool-use", "json-mode", "vision", "streaming"}, ContextWindow: 128000, InputPricePerMTok: 2.50, OutputPricePerMTok: 10.00},
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
}

var _ bindings.Provider = (*Provider)(nil)

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
	body, err := json.Marshal(encodeRequest(req, names))
	if err != nil {
		return bindings.GenerateResponse{}, p.fail(req.Model, 0, "encoding the request", err)
	}
	raw, status, err := p.send(ctx, req, body)
	if err != nil {
		return bindings.GenerateResponse{}, err
	}
	var cr chatResponse
	if err := json.Unmarshal(raw, &cr); err != nil {
		return bindings.GenerateResponse{}, p.fail(req.Model, status, "decoding the response", err)
	}
	if len(cr.Choices) == 0 {
		return bindings.GenerateResponse{}, p.fail(req.Model, status, "the response has no choices", nil)
	}
	out, err := decodeChoice(cr.Choices[0], names)
	if err != nil {
		return bindings.GenerateResponse{}, p.fail(req.Model, status, err.Error(), err)
	}
	out.Model = cr.Model
	if out.Model == "" {
		out.Model = req.Model
	}
	out.Usage = bindings.Usage{InputTokens: cr.Usage.PromptTokens, OutputTokens: cr.Usage.CompletionTokens}
	if m, ok := p.model(req.Model); ok {
		out.Usage.CostUsd = m.Cost(out.Usage.InputTokens, out.Usage.OutputTokens)
	}
	return out, nil
}

// send posts body, retrying 429 and 5xx answers. It returns the body of the
// 2xx answer.
func (p *Provider) send(ctx context.Context, req bindings.GenerateRequest, body []byte) ([]byte, int, error) {
	for attempt := 0; ; attempt++ {
		hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, bytes.NewReader(body))
		if err != nil {
			return nil, 0, p.fail(req.Model, 0, "building the request", err)
		}
		hreq.Header.Set("Content-Type", "application/json")
		hreq.Header.Set("Accept", "application/json")
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
				return nil, 0, p.fail(req.Model, 0, "request cancelled", ctxErr)
			}
			return nil, 0, p.fail(req.Model, 0, "sending the request", err)
		}
		raw, readErr := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
		resp.Body.Close()
		if readErr != nil {
			return nil, resp.StatusCode, p.fail(req.Model, resp.StatusCode, "reading the response", readErr)
		}
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return raw, resp.StatusCode, nil
		}
		retryable := resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
		if !retryable || attempt >= p.maxRetries {
			return nil, resp.StatusCode, p.fail(req.Model, resp.StatusCode, apiErrorMessage(raw, resp.Status), nil)
		}
		wait := p.backoff(attempt, resp.Header.Get("Retry-After"))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, resp.StatusCode, p.fail(req.Model, resp.StatusCode, apiErrorMessage(raw, resp.Status)+" (retry cancelled)", ctx.Err())
		case <-t.C:
		}
	}
}

// backoff is the wait before retry attempt+1: Retry-After when the answer
// has one (seconds or an HTTP date, capped at MaxBackoff), else exponential
// with full jitter between MinBackoff and MaxBackoff.
func (p *Provider) backoff(attempt int, retryAfter string) time.Duration {
	if d, ok := parseRetryAfter(retryAfter, time.Now()); ok {
		return min(d, p.maxBackoff)
	}
	d := p.minBackoff << attempt
	if d <= 0 || d > p.maxBackoff {
		d = p.maxBackoff
	}
	return p.minBackoff/2 + time.Duration(rand.Int64N(int64(d)))
}

func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
		return time.Duration(secs * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func (p *Provider) fail(model string, status int, msg string, cause error) error {
	return &agents.ModelInvocationError{Provider: p.id, Model: model, Status: status, Message: msg, Err: cause}
}

// apiErrorMessage extracts error.message from an API error body, falling
// back to the status line and a prefix of the body.
func apiErrorMessage(raw []byte, status string) string {
	var e struct {
		Error *struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		} `json:"error"`
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
