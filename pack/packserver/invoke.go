package packserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/textproto"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/pack"
)

// serveInvoke answers POST /v1/invoke. Transport checks come first, in this
// order: token (401), media type (415), declared length (413), admission
// (503: draining, not ready, at the cap). Every outcome of running pack
// code is then a 200 with a response message.
//
// The body is read before the call takes its slot, under a read deadline:
// the call's own (kindgi-timeout-ms from the request's arrival) or the
// body timeout, whichever is first. So a caller that stalls part-way
// through its body holds no slot, and is answered (deadline-exceeded, or
// invalid-request for the body timeout, with Connection: close) when its
// time is up; other callers are served meanwhile. A call answered 503 did
// not run: it is admitted, or refused, only once its body is in, and
// refused ones are never decoded.
func (s *Server) serveInvoke(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if !s.authorized(r) {
		transportError(w, http.StatusUnauthorized, "missing or wrong "+pack.HeaderToken)
		return
	}
	if !isJSON(r.Header.Get("Content-Type")) {
		transportError(w, http.StatusUnsupportedMediaType, "the body must be "+pack.ContentType)
		return
	}
	if r.ContentLength > pack.MaxBodyBytes {
		transportError(w, http.StatusRequestEntityTooLarge, "the body is over 10 MiB")
		return
	}
	// Shed load before reading anything when the call cannot be admitted
	// now; admission proper comes once the body is in.
	if why := s.admissible(); why != "" {
		unavailable(w, why)
		return
	}
	timeout, ok := parseTimeout(header(r, keyTimeoutMs))
	if !ok {
		s.answer(w, r, start, invalidRequest(pack.HeaderTimeoutMs+" must be a whole number of milliseconds ≥ 0"), false)
		return
	}
	deadline := start.Add(timeout)
	body, err := s.readBody(w, r, start, deadline)
	switch {
	case err == nil:
	case errors.Is(err, errBodyTooLarge):
		transportError(w, http.StatusRequestEntityTooLarge, "the body is over 10 MiB")
		return
	case errors.Is(err, errBodyBudget):
		unavailable(w, "at the concurrency cap (request bodies in transit)")
		return
	default:
		var msg *pack.ErrorMessage
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(deadline):
			msg = pack.NewError(pack.CodeDeadlineExceeded, fmt.Sprintf("the request body did not arrive within %d ms", timeout.Milliseconds()))
		case errors.Is(err, os.ErrDeadlineExceeded):
			msg = invalidRequest(fmt.Sprintf("the request body did not arrive within %d ms", s.bodyTimeout.Milliseconds()))
		case r.Context().Err() != nil:
			msg = pack.NewError(pack.CodeCancelled, "the caller closed the connection while sending the request")
		default:
			msg = invalidRequest("reading the body: " + err.Error())
		}
		w.Header().Set("Connection", "close")
		s.answer(w, r, start, msg, false)
		return
	}
	if why := s.acquire(); why != "" {
		unavailable(w, why)
		return
	}
	c := &call{s: s, w: w, r: r, start: start}
	defer c.done()
	ctx, cancel := context.WithDeadline(r.Context(), deadline)
	msg := c.dispatch(ctx, body, timeout)
	cancel()
	if _, done := msg.(alreadyAnswered); !done {
		s.answer(w, r, start, msg, false)
	}
}

func unavailable(w http.ResponseWriter, why string) {
	w.Header().Set("Retry-After", RetryAfterSeconds)
	transportError(w, http.StatusServiceUnavailable, "not taking calls: "+why)
}

// alreadyAnswered is what dispatch returns when the answer was already
// written (by the watchdog of a handler that outlived its context).
type alreadyAnswered struct{}

// call is one admitted invoke. Its slot is released as soon as the handler
// returns, before the answer is written, so a caller's next call finds it
// free; when no handler ran, when serveInvoke returns. The handler runs on
// the request's goroutine (a hand-off to another goroutine cost a fifth
// of the throughput); a watchdog answers on time for a handler that does
// not return when its context ends.
type call struct {
	s        *Server
	w        http.ResponseWriter
	r        *http.Request
	start    time.Time
	released bool

	mu       sync.Mutex // orders the watchdog's answer and the handler's return
	answered bool       // the watchdog wrote the answer
	finished bool       // the handler returned: the watchdog must not answer
}

func (c *call) done() {
	if !c.released {
		c.released = true
		c.s.release()
	}
}

// watchdog answers msg for a handler still running when its context ended.
// The answer closes the connection: the request's goroutine stays in the
// handler until it returns, so the connection cannot take another request.
func (c *call) watchdog(msg *pack.ErrorMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished {
		return
	}
	c.answered = true
	c.w.Header().Set("Connection", "close")
	c.s.answer(c.w, c.r, c.start, msg, true)
	_ = http.NewResponseController(c.w).Flush()
}

// dispatch decodes the request and runs the tool or check.
func (c *call) dispatch(ctx context.Context, body []byte, timeout time.Duration) any {
	req, bad := decodeRequest(body)
	if bad != nil {
		return bad
	}
	switch req := req.(type) {
	case *pack.ToolInvoke:
		return c.tool(ctx, req, timeout)
	case *pack.CheckInvoke:
		return c.check(ctx, req, timeout)
	default:
		return invalidRequest(fmt.Sprintf("unsupported request %T", req))
	}
}

func (c *call) tool(ctx context.Context, req *pack.ToolInvoke, timeout time.Duration) any {
	id := req.Tool.ID
	bt := c.s.bound.tools[id]
	if bt == nil {
		return toolError(pack.CodeUnknownTool, id, fmt.Sprintf("tool %q is not in this pack's index", id))
	}
	if req.Tool.Version != "" && req.Tool.Version != bt.index.Version {
		return toolError(pack.CodeToolVersionMismatch, id,
			fmt.Sprintf("tool %q is indexed at version %s, not %s", id, bt.index.Version, req.Tool.Version))
	}
	if issues := validate(bt.input, req.Input); len(issues) > 0 {
		m := toolError(pack.CodeInputValidationFailed, id, fmt.Sprintf("input of %q does not match its schema", id))
		m.Issues = issues
		return m
	}
	out, fail := c.run(ctx, "tool", id, timeout, func(ctx context.Context) (any, error) {
		return bt.handler(ctx, req.Input, req.Ctx)
	})
	if fail != nil {
		return fail
	}
	raw, err := encodeOutput(out)
	if err != nil {
		m := toolError(pack.CodeOutputValidationFailed, id, fmt.Sprintf("output of %q is not JSON: %v", id, err))
		m.Issues = []pack.Issue{{InstancePath: "", Message: "must be JSON-encodable: " + err.Error()}}
		return m
	}
	// A json.RawMessage output that does not parse gives an issue here too.
	if issues := validate(bt.output, raw); len(issues) > 0 {
		m := toolError(pack.CodeOutputValidationFailed, id, fmt.Sprintf("output of %q does not match its schema", id))
		m.Issues = issues
		return m
	}
	return resultMessage(raw)
}

func (c *call) check(ctx context.Context, req *pack.CheckInvoke, timeout time.Duration) any {
	id := req.Check.ID
	h, ok := c.s.bound.checks[id]
	if !ok {
		m := pack.NewError(pack.CodeUnknownCheck, fmt.Sprintf("check %q is not in this pack's index", id))
		m.CheckID = id
		return m
	}
	out, fail := c.run(ctx, "check", id, timeout, func(ctx context.Context) (any, error) {
		return h(ctx, req.Config, req.Trace)
	})
	if fail != nil {
		return fail
	}
	res := &pack.CheckResult{V: pack.Version, Kind: pack.KindCheckResult, Result: out.(pack.CheckOutcome)}
	raw, err := json.Marshal(res)
	if err != nil {
		m := pack.NewError(pack.CodeOutputValidationFailed, fmt.Sprintf("result of check %q is not JSON: %v", id, err))
		m.CheckID = id
		m.Issues = []pack.Issue{{InstancePath: "", Message: "must be JSON-encodable: " + err.Error()}}
		return m
	}
	return json.RawMessage(raw)
}

// outcome is what a handler gave back.
type outcome struct {
	out   any
	err   error
	cause *pack.Cause // set for a panic
}

// run runs fn on the request's goroutine. Should ctx end first, a
// watchdog answers deadline-exceeded (or cancelled) on time even if fn
// ignores ctx; run then returns alreadyAnswered once fn returns. The slot is
// released when fn returns, so the cap bounds the handlers really running.
//
// kind ("tool" or "check") and id name the handler in messages.
func (c *call) run(ctx context.Context, kind, id string, timeout time.Duration, fn func(context.Context) (any, error)) (any, any) {
	if err := ctx.Err(); err != nil {
		m := ctxError(err, kind+" "+id, timeout)
		setSubject(m, kind, id)
		return nil, m
	}
	stop := context.AfterFunc(ctx, func() {
		m := ctxError(ctx.Err(), kind+" "+id, timeout)
		setSubject(m, kind, id)
		c.watchdog(m)
	})
	o := safeCall(ctx, fn)
	c.done()
	if !stop() {
		// The watchdog started: it has answered, or will see finished.
		c.mu.Lock()
		c.finished = true
		late := c.answered
		c.mu.Unlock()
		if late {
			return nil, alreadyAnswered{}
		}
	}
	if o.cause == nil && o.err == nil {
		return o.out, nil
	}
	what := kind + " " + id
	var m *pack.ErrorMessage
	switch {
	case o.cause != nil:
		m = pack.NewError(pack.CodeHandlerThrow, fmt.Sprintf("%s panicked: %s", what, o.cause.Message))
		m.Cause = o.cause
	case ctx.Err() != nil:
		m = ctxError(ctx.Err(), what, timeout)
	default:
		m = pack.NewError(pack.CodeHandlerThrow, fmt.Sprintf("%s failed: %v", what, o.err))
		m.Cause = errorCause(o.err)
	}
	setSubject(m, kind, id)
	return nil, m
}

// validate validates raw JSON against sch. It decodes numbers as float64,
// as Ajv's JavaScript numbers are, which is also the cheaper decode; JSON
// that does not decode so (bad JSON, a number out of float64's range) is
// handed to the schema raw, which decodes it exactly or reports it.
//
// JSON a simple schema certainly accepts is answered from the bytes, with
// no decode (pack.Schema.FastAccepts).
func validate(sch *pack.Schema, raw []byte) []pack.Issue {
	if sch.FastAccepts(raw) {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return sch.Validate(json.RawMessage(raw))
	}
	return sch.Validate(v)
}

// setSubject sets the toolId or checkId of an error message.
func setSubject(m *pack.ErrorMessage, kind, id string) {
	if kind == "tool" {
		m.ToolID = id
	} else {
		m.CheckID = id
	}
}

// safeCall runs fn, turning a panic into a cause with the stack.
func safeCall(ctx context.Context, fn func(context.Context) (any, error)) (o outcome) {
	defer func() {
		if r := recover(); r != nil {
			o = outcome{cause: panicCause(r, debug.Stack())}
		}
	}()
	out, err := fn(ctx)
	return outcome{out: out, err: err}
}

func panicCause(r any, stack []byte) *pack.Cause {
	c := &pack.Cause{Name: "panic", Message: fmt.Sprint(r), Stack: string(stack)}
	if err, ok := r.(error); ok {
		c.Name = fmt.Sprintf("%T", err)
		c.Message = err.Error()
	}
	return c
}

// errorCause serializes a returned error: its code when it carries one
// (agents.CodeOf), else its Go type, and its message. Go errors carry no
// stack, so none is sent.
func errorCause(err error) *pack.Cause {
	name := agents.CodeOf(err)
	if name == "" {
		name = fmt.Sprintf("%T", err)
	}
	return &pack.Cause{Name: name, Message: err.Error()}
}

func ctxError(err error, what string, timeout time.Duration) *pack.ErrorMessage {
	if errors.Is(err, context.DeadlineExceeded) {
		return pack.NewError(pack.CodeDeadlineExceeded, fmt.Sprintf("%s did not finish within %d ms", what, timeout.Milliseconds()))
	}
	return pack.NewError(pack.CodeCancelled, what+" was cancelled: the caller closed the connection or the service stopped")
}

// invalidRequest is an invalid-request answer about the request as a whole
// (not its schema): one issue without a keyword carries the message.
func invalidRequest(message string) *pack.ErrorMessage {
	m := pack.NewError(pack.CodeInvalidRequest, message)
	m.Issues = []pack.Issue{{InstancePath: "", Message: message}}
	return m
}

func toolError(code, toolID, message string) *pack.ErrorMessage {
	m := pack.NewError(code, message)
	m.ToolID = toolID
	return m
}

// encodeOutput returns the handler's value as JSON. A json.RawMessage (or
// []byte of JSON) is taken as is; validation later proves it is JSON.
func encodeOutput(out any) ([]byte, error) {
	if raw, ok := out.(json.RawMessage); ok {
		return raw, nil
	}
	return json.Marshal(out)
}

// resultMessage is a ToolResult written out directly: output is JSON
// that was just validated, so re-encoding would only copy it. answer
// writes it in three pieces, with no copy at all.
type resultMessage []byte

// resultHead and resultTail surround the output of a resultMessage.
var (
	resultHead = []byte(`{"v":2,"kind":"result","output":`)
	resultTail = []byte(`}`)
)

// MarshalJSON is the message as answer writes it.
func (r resultMessage) MarshalJSON() ([]byte, error) {
	return slices.Concat(resultHead, r, resultTail), nil
}

// answer writes a response message with the invoke headers. An error
// message is logged first, so a failing logger is a service failure (500)
// rather than a lost record. flush says the answer is flushed while the
// handler may still run (the watchdog's).
func (s *Server) answer(w http.ResponseWriter, r *http.Request, start time.Time, msg any, flush bool) {
	var body [3][]byte // written one after the other
	var err error
	if rm, ok := msg.(resultMessage); ok {
		body = [3][]byte{resultHead, rm, resultTail}
	} else {
		body[0], err = json.Marshal(msg)
	}
	size := len(body[0]) + len(body[1]) + len(body[2])
	if err != nil {
		transportError(w, http.StatusInternalServerError, "encoding the response: "+err.Error())
		return
	}
	ms := time.Since(start).Milliseconds()
	if em, ok := msg.(*pack.ErrorMessage); ok && s.logger != nil {
		attrs := []slog.Attr{slog.String("code", em.Code), slog.Int64("durationMs", ms)}
		if em.ToolID != "" {
			attrs = append(attrs, slog.String("toolId", em.ToolID))
		}
		if em.CheckID != "" {
			attrs = append(attrs, slog.String("checkId", em.CheckID))
		}
		if id := header(r, keyRequestID); id != "" {
			attrs = append(attrs, slog.String("requestId", id))
		}
		s.logger.LogAttrs(context.WithoutCancel(r.Context()), slog.LevelWarn, "invoke failed", attrs...)
	}
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h[keyArtifactVersion] = s.artifactHeader
	h[keyDurationMs] = durationValue(ms)
	// An explicit length lets a watchdog's flushed answer be complete
	// while the handler is still running. net/http sets the length itself
	// of a body written whole, before the handler returns, within its
	// chunking buffer: the usual answer needs none.
	if flush || size > chunkingBuffer {
		h["Content-Length"] = []string{strconv.Itoa(size)}
	}
	w.WriteHeader(http.StatusOK)
	for _, b := range body {
		if len(b) > 0 {
			_, _ = w.Write(b)
		}
	}
}

// chunkingBuffer is the size of net/http's buffer before chunking: a body
// written whole within it, before the handler returns, is sent with a
// Content-Length that net/http computes.
const chunkingBuffer = 2048

// durationValues are the kindgi-duration-ms header values of the first
// second, shared by every answer (net/http only reads them).
var durationValues = func() [][]string {
	v := make([][]string, 1000)
	for ms := range v {
		v[ms] = []string{strconv.Itoa(ms)}
	}
	return v
}()

func durationValue(ms int64) []string {
	if ms >= 0 && ms < int64(len(durationValues)) {
		return durationValues[ms]
	}
	return []string{strconv.FormatInt(ms, 10)}
}

// Canonical header keys, computed once: Header.Get and Set canonicalise
// (and allocate) on every call.
var (
	keyToken           = textproto.CanonicalMIMEHeaderKey(pack.HeaderToken)
	keyTimeoutMs       = textproto.CanonicalMIMEHeaderKey(pack.HeaderTimeoutMs)
	keyRequestID       = textproto.CanonicalMIMEHeaderKey(pack.HeaderRequestID)
	keyArtifactVersion = textproto.CanonicalMIMEHeaderKey(pack.HeaderArtifactVersion)
	keyDurationMs      = textproto.CanonicalMIMEHeaderKey(pack.HeaderDurationMs)
	jsonContentType    = []string{pack.ContentType}
)

// header returns the first value of a request header by canonical key.
func header(r *http.Request, key string) string {
	if v := r.Header[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// parseTimeout reads kindgi-timeout-ms: absent is DefaultTimeoutMs. The
// value is a whole number of milliseconds ≥ 0 in decimal digits (an
// optional leading +, as strconv reads it); every value past what a
// time.Duration holds (about 292 years), however many digits it has, is
// clamped to that.
func parseTimeout(v string) (time.Duration, bool) {
	if v == "" {
		return pack.DefaultTimeoutMs * time.Millisecond, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if errors.Is(err, strconv.ErrRange) && n == math.MaxInt64 {
		err = nil // all digits, too many of them: clamped below
	}
	if err != nil || n < 0 {
		return 0, false
	}
	if n > math.MaxInt64/int64(time.Millisecond) {
		n = math.MaxInt64 / int64(time.Millisecond)
	}
	return time.Duration(n) * time.Millisecond, true
}

// firstBodyBuffer is the most readBody allocates before any of the body
// has arrived; the buffer grows with what does.
const firstBodyBuffer = 64 << 10

// readBody reads the whole body, at most MaxBodyBytes, under a read
// deadline: deadline (the call's) or the body timeout from start,
// whichever is first. Its buffer is reserved from the server's budget for
// bodies in transit as it grows (errBodyBudget when the budget is spent)
// and released when readBody returns: a caller holds memory for what it
// has sent, not for what it declared.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, start, deadline time.Time) ([]byte, error) {
	rc := http.NewResponseController(w)
	if bd := start.Add(s.bodyTimeout); bd.Before(deadline) {
		deadline = bd
	}
	// Not every ResponseWriter supports deadlines (a recorder does not);
	// then the server's own timeouts are all there is.
	if rc.SetReadDeadline(deadline) == nil {
		// A deadline left in place would end the connection's background
		// read, and so cancel the handler's context, when it passes.
		defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	}
	// A declared length is already checked against the limit, and
	// net/http reads no more than it declares; the length check below
	// holds for a body given to ServeHTTP directly.
	var rd io.Reader = r.Body
	if r.ContentLength < 0 {
		rd = http.MaxBytesReader(w, r.Body, pack.MaxBodyBytes)
	}
	size := 512
	if r.ContentLength > 0 {
		size = int(min(r.ContentLength+1, firstBodyBuffer)) // +1 so EOF is seen without growing
	}
	var reserved int64
	defer func() { s.unreserve(reserved) }()
	if !s.reserve(int64(size)) {
		return nil, errBodyBudget
	}
	reserved = int64(size)
	buf := make([]byte, 0, size)
	for {
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > pack.MaxBodyBytes {
			return nil, errBodyTooLarge // a body longer than it declared
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				return nil, errBodyTooLarge
			}
			return nil, err
		}
		if len(buf) == cap(buf) {
			// Doubling, but never past the most a body can need, so
			// what a body reserves is bounded by MaxBodyBytes+1.
			next := max(min(2*cap(buf), pack.MaxBodyBytes+1), cap(buf)+1)
			if !s.reserve(int64(next) - reserved) {
				return nil, errBodyBudget
			}
			reserved = int64(next)
			buf = append(make([]byte, 0, next), buf...)
		}
	}
}
