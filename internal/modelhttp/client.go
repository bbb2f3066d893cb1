package modelhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// MaxResponseSize bounds the bytes read from one non-streamed answer.
const MaxResponseSize = 32 << 20

// Config is what an HTTP provider hands NewClient: its options as the user
// set them, and its own defaults and headers.
type Config struct {
	// ID is the provider id; DefaultID when empty.
	ID, DefaultID string
	// Endpoint is the URL every request is posted to.
	Endpoint string
	// HTTPClient sends the requests; http.DefaultClient when nil.
	HTTPClient *http.Client
	// Models is the model table; DefaultModels when empty. Both are copied.
	Models, DefaultModels []bindings.ModelInfo
	// MaxRetries bounds the retries of a retryable answer: 3 when 0, none
	// when negative.
	MaxRetries int
	// MinBackoff and MaxBackoff bound the wait between retries when the
	// answer has no Retry-After: 250 ms and 10 s when zero or negative.
	MinBackoff, MaxBackoff time.Duration
	// Header, when set, adds the provider's own headers (authentication,
	// API version, idempotency key) to every request for req.
	Header func(h http.Header, req bindings.GenerateRequest)
}

// Client is the HTTP plumbing a model provider shares with the others:
// posting a request with retries, reading the answer whole or as a stream,
// pricing from the model table, and failing with
// *agents.ModelInvocationError. It is safe for concurrent use.
type Client struct {
	id         string
	endpoint   string
	http       *http.Client
	models     []bindings.ModelInfo
	maxRetries int
	minBackoff time.Duration
	maxBackoff time.Duration
	header     func(http.Header, bindings.GenerateRequest)
}

// NewClient returns a Client for cfg, its zero fields set to their
// defaults.
func NewClient(cfg Config) *Client {
	c := &Client{
		id:         cfg.ID,
		endpoint:   cfg.Endpoint,
		http:       cfg.HTTPClient,
		models:     append([]bindings.ModelInfo(nil), cfg.Models...),
		maxRetries: cfg.MaxRetries,
		minBackoff: cfg.MinBackoff,
		maxBackoff: cfg.MaxBackoff,
		header:     cfg.Header,
	}
	if c.id == "" {
		c.id = cfg.DefaultID
	}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	if len(c.models) == 0 {
		c.models = append(c.models, cfg.DefaultModels...)
	}
	switch {
	case c.maxRetries == 0:
		c.maxRetries = 3
	case c.maxRetries < 0:
		c.maxRetries = 0
	}
	if c.minBackoff <= 0 {
		c.minBackoff = 250 * time.Millisecond
	}
	if c.maxBackoff <= 0 {
		c.maxBackoff = 10 * time.Second
	}
	return c
}

// Setting returns v, else the environment variable env when it is set,
// else def: how a provider fills an option left empty.
func Setting(v, env, def string) string {
	if v != "" {
		return v
	}
	if e := os.Getenv(env); e != "" {
		return e
	}
	return def
}

// ID returns the provider id.
func (c *Client) ID() string { return c.id }

// Endpoint returns the URL requests are posted to.
func (c *Client) Endpoint() string { return c.endpoint }

// Models returns a copy of the model table.
func (c *Client) Models() []bindings.ModelInfo {
	return append([]bindings.ModelInfo(nil), c.models...)
}

// Model returns the entry of the model table for id.
func (c *Client) Model(id string) (bindings.ModelInfo, bool) {
	for _, m := range c.models {
		if m.ID == id {
			return m, true
		}
	}
	return bindings.ModelInfo{}, false
}

// Fail returns the provider's error for a failed call of model: status is
// the answer's HTTP status (0 when there was none), msg what went wrong,
// cause the error behind it (nil when none).
func (c *Client) Fail(model string, status int, msg string, cause error) error {
	return &agents.ModelInvocationError{Provider: c.id, Model: model, Status: status, Message: msg, Err: cause}
}

// Generate posts wire (the provider's encoding of req) and returns what
// decode makes of the 2xx answer, retrying as Post does.
func (c *Client) Generate(ctx context.Context, req bindings.GenerateRequest, wire any,
	decode func(*http.Response) (bindings.GenerateResponse, error)) (bindings.GenerateResponse, error) {
	body, err := json.Marshal(wire)
	if err != nil {
		return bindings.GenerateResponse{}, c.Fail(req.Model, 0, "encoding the request", err)
	}
	var out bindings.GenerateResponse
	err = c.Post(ctx, req, body, false, func(resp *http.Response) (bool, error) {
		var err error
		out, err = decode(resp)
		return false, err
	})
	if err != nil {
		return bindings.GenerateResponse{}, err
	}
	return out, nil
}

// StreamFunc reads one event stream, calling emit for every delta as it
// arrives. A failure to read the stream is its error (retried while
// nothing was delivered; an error with an HTTPStatus() int method is
// reported with that status); once the stream is read, assemble returns
// the whole answer, or why it is not one.
type StreamFunc func(body io.Reader, emit func(bindings.Delta)) (assemble func() (bindings.GenerateResponse, error), err error)

// GenerateStream posts wire (the provider's streaming encoding of req)
// and returns the assembled answer, having called onDelta (when not nil)
// for every delta as it arrived. An event stream is read by stream; an
// application/json answer (a server that does not stream) by whole, its
// text and then each tool call delivered as deltas at once. A failure of
// the stream, like a retryable answer, is retried only while nothing has
// been delivered to onDelta: once the caller has seen part of an answer,
// the failure is returned and the caller decides. Cancelling ctx closes
// the connection at once.
func (c *Client) GenerateStream(ctx context.Context, req bindings.GenerateRequest, wire any, onDelta func(bindings.Delta),
	whole func(*http.Response) (bindings.GenerateResponse, error), stream StreamFunc) (bindings.GenerateResponse, error) {
	body, err := json.Marshal(wire)
	if err != nil {
		return bindings.GenerateResponse{}, c.Fail(req.Model, 0, "encoding the request", err)
	}
	delivered := false
	emit := func(d bindings.Delta) {
		delivered = true
		if onDelta != nil {
			onDelta(d)
		}
	}
	var out bindings.GenerateResponse
	err = c.Post(ctx, req, body, true, func(resp *http.Response) (bool, error) {
		if isJSON(resp) {
			var err error
			if out, err = whole(resp); err == nil {
				deliverWhole(out, emit)
			}
			return false, err
		}
		assemble, err := stream(resp.Body, emit)
		if err != nil {
			if ctx.Err() != nil {
				return false, c.Fail(req.Model, 0, "request cancelled", ctx.Err())
			}
			return !delivered, c.Fail(req.Model, streamStatus(err), err.Error(), err)
		}
		out, err = assemble()
		if err != nil {
			return false, c.Fail(req.Model, resp.StatusCode, err.Error(), err)
		}
		return false, nil
	})
	if err != nil {
		return bindings.GenerateResponse{}, err
	}
	return out, nil
}

// streamStatus is the HTTP status a stream's failure stands for: what its
// HTTPStatus method says (Anthropic's overloaded_error event is a 529),
// else 0.
func streamStatus(err error) int {
	var s interface{ HTTPStatus() int }
	if errors.As(err, &s) {
		return s.HTTPStatus()
	}
	return 0
}

// isJSON reports an answer sent as application/json rather than as an
// event stream.
func isJSON(resp *http.Response) bool {
	return strings.HasPrefix(strings.TrimSpace(resp.Header.Get("Content-Type")), "application/json")
}

// deliverWhole delivers a whole answer as deltas: its text, then each tool
// call.
func deliverWhole(out bindings.GenerateResponse, emit func(bindings.Delta)) {
	if out.Text != "" {
		emit(bindings.Delta{Text: out.Text})
	}
	for i, tc := range out.ToolCalls {
		emit(bindings.Delta{ToolCallIndex: i, ToolCallID: tc.ID, ToolName: tc.Name, ArgumentsDelta: string(tc.Arguments)})
	}
}

// ReadJSON decodes a non-streamed answer (at most MaxResponseSize bytes)
// into v.
func (c *Client) ReadJSON(ctx context.Context, model string, resp *http.Response, v any) error {
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseSize))
	if err != nil {
		if ctx.Err() != nil {
			return c.Fail(model, 0, "request cancelled", ctx.Err())
		}
		return c.Fail(model, resp.StatusCode, "reading the response", err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return c.Fail(model, resp.StatusCode, "decoding the response", err)
	}
	return nil
}

// Post sends body until an attempt succeeds, retrying 429 and 5xx answers
// (and what read reports as retryable) up to MaxRetries times, as Retry
// does. A 2xx answer is handed to read, which consumes its body.
func (c *Client) Post(ctx context.Context, req bindings.GenerateRequest, body []byte, stream bool, read func(*http.Response) (retryable bool, err error)) error {
	return Retry(ctx, c.maxRetries, c.minBackoff, c.maxBackoff,
		func() (bool, string, error) { return c.attempt(ctx, req, body, stream, read) },
		func(last error) error {
			var mi *agents.ModelInvocationError
			if errors.As(last, &mi) {
				return c.Fail(req.Model, mi.Status, mi.Message+" (retry cancelled)", ctx.Err())
			}
			return c.Fail(req.Model, 0, "retry cancelled", ctx.Err())
		})
}

// attempt sends body once.
func (c *Client) attempt(ctx context.Context, req bindings.GenerateRequest, body []byte, stream bool, read func(*http.Response) (bool, error)) (retryable bool, retryAfter string, err error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return false, "", c.Fail(req.Model, 0, "building the request", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if stream {
		hreq.Header.Set("Accept", "text/event-stream")
	} else {
		hreq.Header.Set("Accept", "application/json")
	}
	if c.header != nil {
		c.header(hreq.Header, req)
	}
	resp, err := c.http.Do(hreq)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return false, "", c.Fail(req.Model, 0, "request cancelled", ctxErr)
		}
		return false, "", c.Fail(req.Model, 0, "sending the request", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		retryable, err := read(resp)
		return retryable, "", err
	}
	raw, readErr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if readErr != nil && ctx.Err() != nil {
		return false, "", c.Fail(req.Model, resp.StatusCode, "request cancelled", ctx.Err())
	}
	retryable = resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
	return retryable, resp.Header.Get("Retry-After"), c.Fail(req.Model, resp.StatusCode, APIErrorMessage(raw, resp.Status), nil)
}

// APIErrorMessage extracts error.message from an API error body
// ({"error": {"message": …}}, the shape both OpenAI and Anthropic use),
// falling back to the status line and a prefix of the body.
func APIErrorMessage(raw []byte, status string) string {
	var e struct {
		Error *struct {
			Message string `json:"message"`
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

// ToolNames maps the names of the offered tools (tool ids) to the
// function names the APIs accept and back (see NameMap).
func ToolNames(tools []bindings.ToolDefinition) NameMap {
	ids := make([]string, len(tools))
	for i, t := range tools {
		ids[i] = t.Name
	}
	return NewNameMap(ids)
}
