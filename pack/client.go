package pack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Client defaults; a zero ClientOptions field takes these.
const (
	DefaultMaxRetries       = 3
	DefaultRetryWait        = 500 * time.Millisecond
	DefaultMaxRetryWait     = 30 * time.Second
	DefaultMaxResponseBytes = 64 << 20
)

// ClientOptions tune a Client. A nil *ClientOptions takes every default.
type ClientOptions struct {
	// HTTPClient sends the requests. Nil uses a client without a timeout of
	// its own: the context of each call bounds it.
	HTTPClient *http.Client
	// MaxRetries is how many times a call is sent again after an answer
	// that proves it did not run: a 503, or a connection that failed before
	// the request could be written (no connection was obtained). 0 means
	// DefaultMaxRetries; a negative value disables retries.
	MaxRetries int
	// RetryWait is the wait before a retry when a 503 carries no usable
	// Retry-After, and after a failed dial. 0 means DefaultRetryWait.
	RetryWait time.Duration
	// MaxRetryWait caps one wait; a longer Retry-After is cut to it. 0
	// means DefaultMaxRetryWait.
	MaxRetryWait time.Duration
	// MaxResponseBytes bounds the body of an answer; a longer one is an
	// invalid-response error. 0 means DefaultMaxResponseBytes.
	MaxResponseBytes int64
}

// Client calls a pack service over HTTP: the transport of pack protocol v2.
// It is safe for concurrent use.
//
// Every call sends kindgi-protocol; Invoke and Info send the token in
// kindgi-pack-token; Invoke and Check send kindgi-timeout-ms computed from
// the context's deadline (no header when the context has none, and the
// service applies its default), kindgi-run-id and kindgi-request-id when
// known. A call is retried only when it provably did not run: a 503 (after
// the wait its Retry-After asks for, capped, and never past the context's
// deadline) or a failed dial. A 200 error message and a connection that
// failed after the request was written are never retried.
type Client struct {
	base        string
	token       string
	http        *http.Client
	maxRetries  int
	retryWait   time.Duration
	maxWait     time.Duration
	maxResponse int64
}

// NewClient returns a client of the pack service at baseURL (scheme, host
// and an optional path prefix, e.g. "https://pack.example.com") that
// authenticates with token.
func NewClient(baseURL, token string, opts *ClientOptions) *Client {
	var o ClientOptions
	if opts != nil {
		o = *opts
	}
	c := &Client{
		base:        strings.TrimRight(baseURL, "/"),
		token:       token,
		http:        o.HTTPClient,
		maxRetries:  o.MaxRetries,
		retryWait:   o.RetryWait,
		maxWait:     o.MaxRetryWait,
		maxResponse: o.MaxResponseBytes,
	}
	if c.http == nil {
		c.http = &http.Client{}
	}
	switch {
	case c.maxRetries == 0:
		c.maxRetries = DefaultMaxRetries
	case c.maxRetries < 0:
		c.maxRetries = 0
	}
	if c.retryWait <= 0 {
		c.retryWait = DefaultRetryWait
	}
	if c.maxWait <= 0 {
		c.maxWait = DefaultMaxRetryWait
	}
	if c.maxResponse <= 0 {
		c.maxResponse = DefaultMaxResponseBytes
	}
	return c
}

// InvokeRequest is a tool call.
type InvokeRequest struct {
	// ToolID is the tool id, resolved by the service from its own index.
	ToolID string
	// Version, when set, makes the service refuse a different indexed
	// version (tool-version-mismatch).
	Version string
	// Input is the tool's input; nil sends {}.
	Input json.RawMessage
	// Ctx is the call context; TenantID and RunID are required by the
	// protocol.
	Ctx CallContext
}

// Invoke runs a tool on the service and returns its output. An error
// message from the service is an *Error with the message's code
// (input-validation-failed, handler-throw, …) and the message in Response.
func (c *Client) Invoke(ctx context.Context, req InvokeRequest) (json.RawMessage, error) {
	input := req.Input
	if input == nil {
		input = json.RawMessage(`{}`)
	}
	body, err := json.Marshal(ToolInvoke{V: Version, Kind: KindInvoke, Tool: ToolRef{ID: req.ToolID, Version: req.Version}, Input: input, Ctx: req.Ctx})
	if err != nil {
		return nil, &Error{ErrorCode: CodeInvalidRequest, Message: "encoding the invoke: " + err.Error(), Err: err}
	}
	msg, err := c.call(ctx, body, req.Ctx.RunID, req.Ctx.RequestID)
	if err != nil {
		return nil, err
	}
	switch m := msg.(type) {
	case *ToolResult:
		return m.Output, nil
	case *ErrorMessage:
		return nil, messageError(m)
	}
	return nil, &Error{Status: http.StatusOK, ErrorCode: CodeInvalidResponse, Message: fmt.Sprintf("an invoke was answered with %T", msg)}
}

// Check runs a guardrail check on the service: config and trace are JSON
// objects. A check that ran and failed is a CheckOutcome with Passed false,
// not an error. The run id of the trace, when it has one, is sent as
// kindgi-run-id.
func (c *Client) Check(ctx context.Context, checkID string, config, trace json.RawMessage) (CheckOutcome, error) {
	if config == nil {
		config = json.RawMessage(`{}`)
	}
	body, err := json.Marshal(CheckInvoke{V: Version, Kind: KindCheckInvoke, Check: CheckRef{ID: checkID}, Config: config, Trace: trace})
	if err != nil {
		return CheckOutcome{}, &Error{ErrorCode: CodeInvalidRequest, Message: "encoding the check-invoke: " + err.Error(), Err: err}
	}
	var head struct {
		RunID string `json:"runId"`
	}
	_ = json.Unmarshal(trace, &head) // best effort: the header is optional
	msg, err := c.call(ctx, body, head.RunID, "")
	if err != nil {
		return CheckOutcome{}, err
	}
	switch m := msg.(type) {
	case *CheckResult:
		return m.Result, nil
	case *ErrorMessage:
		return CheckOutcome{}, messageError(m)
	}
	return CheckOutcome{}, &Error{Status: http.StatusOK, ErrorCode: CodeInvalidResponse, Message: fmt.Sprintf("a check-invoke was answered with %T", msg)}
}

// Info returns the service's GET /v1/info answer.
func (c *Client) Info(ctx context.Context) (Info, error) {
	status, body, err := c.send(ctx, http.MethodGet, PathInfo, nil, "", "", true, true)
	if err != nil {
		return Info{}, err
	}
	if status != http.StatusOK {
		return Info{}, statusError(status, body)
	}
	if issues := ValidateInfo(body); issues != nil {
		return Info{}, invalidResponse("info", issues)
	}
	var info Info
	if err := json.Unmarshal(body, &info); err != nil {
		return Info{}, &Error{Status: status, ErrorCode: CodeInvalidResponse, Message: err.Error(), Err: err}
	}
	return info, nil
}

// Healthz returns nil while the service process is up (GET /healthz
// answers 200). It is not retried.
func (c *Client) Healthz(ctx context.Context) error { return c.probe(ctx, PathHealthz) }

// Readyz returns nil once the service is ready (GET /readyz answers 200);
// a service that is loading or draining gives an *Error with code
// unavailable. It is not retried.
func (c *Client) Readyz(ctx context.Context) error { return c.probe(ctx, PathReadyz) }

func (c *Client) probe(ctx context.Context, path string) error {
	status, body, err := c.send(ctx, http.MethodGet, path, nil, "", "", false, false)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return statusError(status, body)
	}
	return nil
}

// call posts a request message to /v1/invoke and decodes the response.
func (c *Client) call(ctx context.Context, body []byte, runID, requestID string) (any, error) {
	status, resp, err := c.send(ctx, http.MethodPost, PathInvoke, body, runID, requestID, true, true)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, statusError(status, resp)
	}
	msg, bad := DecodeResponse(resp)
	if bad != nil {
		return nil, invalidResponse("response", bad.Issues)
	}
	return msg, nil
}

// send performs one logical call, retrying while it provably did not run,
// and returns the status and body of the answer that ended it. A 503
// whose retries ran out is returned as an *Error.
func (c *Client) send(ctx context.Context, method, path string, body []byte, runID, requestID string, auth, retry bool) (int, []byte, error) {
	for attempt := 0; ; attempt++ {
		status, header, resp, sent, err := c.attempt(ctx, method, path, body, runID, requestID, auth)
		var wait time.Duration
		switch {
		case err != nil && (sent || ctx.Err() != nil):
			return 0, nil, err
		case err != nil:
			wait = c.retryWait // the dial failed: nothing was sent
		case status == http.StatusServiceUnavailable:
			wait = c.retryAfter(header.Get("Retry-After"))
			err = statusError(status, resp)
		default:
			return status, resp, nil
		}
		if !retry || attempt >= c.maxRetries {
			return 0, nil, err
		}
		if d, ok := ctx.Deadline(); ok && time.Until(d) <= wait {
			return 0, nil, err // no time left to wait: give up now
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, nil, contextError(ctx)
		case <-t.C:
		}
	}
}

// attempt sends the request once. sent reports whether a connection was
// obtained, after which the request may have reached the service.
func (c *Client) attempt(ctx context.Context, method, path string, body []byte, runID, requestID string, auth bool) (status int, header http.Header, resp []byte, sent bool, err error) {
	if ctx.Err() != nil {
		return 0, nil, nil, false, contextError(ctx)
	}
	var gotConn atomic.Bool
	tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { gotConn.Store(true) }})
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(tctx, method, c.base+path, rd)
	if err != nil {
		// A malformed base URL: nothing was sent, but retrying cannot help.
		return 0, nil, nil, true, &Error{ErrorCode: CodeTransport, Message: err.Error(), Err: err}
	}
	h := req.Header
	h.Set(HeaderProtocol, strconv.Itoa(Version))
	h.Set("Accept", ContentType)
	if body != nil {
		h.Set("Content-Type", ContentType)
	}
	if auth {
		h.Set(HeaderToken, c.token)
	}
	if runID != "" {
		h.Set(HeaderRunID, runID)
	}
	if requestID != "" {
		h.Set(HeaderRequestID, requestID)
	}
	if d, ok := ctx.Deadline(); ok && method == http.MethodPost {
		left := time.Until(d)
		if left <= 0 {
			return 0, nil, nil, false, contextError(ctx)
		}
		ms := (left + time.Millisecond - 1) / time.Millisecond
		h.Set(HeaderTimeoutMs, strconv.FormatInt(int64(ms), 10))
	}
	r, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, nil, gotConn.Load(), contextError(ctx)
		}
		return 0, nil, nil, gotConn.Load(), &Error{ErrorCode: CodeTransport, Message: err.Error(), Err: err}
	}
	defer r.Body.Close()
	resp, err = io.ReadAll(io.LimitReader(r.Body, c.maxResponse+1))
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, nil, true, contextError(ctx)
		}
		return 0, nil, nil, true, &Error{Status: r.StatusCode, ErrorCode: CodeTransport, Message: "reading the answer: " + err.Error(), Err: err}
	}
	if int64(len(resp)) > c.maxResponse {
		return 0, nil, nil, true, &Error{Status: r.StatusCode, ErrorCode: CodeInvalidResponse, Message: fmt.Sprintf("answer over %d bytes", c.maxResponse)}
	}
	return r.StatusCode, r.Header, resp, true, nil
}

// retryAfter is the wait a Retry-After value asks for (delay seconds or an
// HTTP date), capped; RetryWait when it is missing or unreadable.
func (c *Client) retryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return c.retryWait
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return c.retryWait
		}
		if n > int64(c.maxWait/time.Second) {
			return c.maxWait
		}
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = max(time.Until(t), 0)
	} else {
		return c.retryWait
	}
	return min(d, c.maxWait)
}

// contextError reports the end of the caller's context.
func contextError(ctx context.Context) *Error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{ErrorCode: CodeDeadlineExceeded, Message: "the call's deadline passed", Err: err}
	}
	return &Error{ErrorCode: CodeCancelled, Message: "the call was cancelled", Err: err}
}

// statusError reports a non-200 answer; a short prefix of its body becomes
// the message.
func statusError(status int, body []byte) *Error {
	msg := http.StatusText(status)
	if b := strings.TrimSpace(string(body)); b != "" {
		if len(b) > 200 {
			b = b[:200] + "…"
		}
		msg += ": " + b
	}
	return &Error{Status: status, ErrorCode: statusCode(status), Message: msg}
}

// messageError reports a 200 error message.
func messageError(m *ErrorMessage) *Error {
	return &Error{Status: http.StatusOK, ErrorCode: m.Code, Message: m.Message, Response: m}
}

// invalidResponse reports a 200 answer that breaks the protocol schema.
func invalidResponse(what string, issues []Issue) *Error {
	msg := "the " + what + " is not a valid protocol message"
	if len(issues) > 0 {
		msg += ": " + issues[0].String()
		if len(issues) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(issues)-1)
		}
	}
	return &Error{Status: http.StatusOK, ErrorCode: CodeInvalidResponse, Message: msg}
}
