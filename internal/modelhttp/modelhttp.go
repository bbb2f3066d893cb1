// Package modelhttp holds what the HTTP model providers (providers/openai,
// providers/anthropic) share: a Server-Sent Events reader, the mapping of
// tool ids to the function names the APIs allow, the retry loop and its waits,
// and Client, the request and answer plumbing built on them.
package modelhttp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// MaxEventSize bounds one SSE line (and so one event's data line): a chunk
// of a model stream is a few hundred bytes, a whole non-streamed answer at
// most a few MiB.
const MaxEventSize = 16 << 20

// MaxStreamSize bounds the bytes read from one streamed answer (as a
// non-streamed answer is bounded to 32 MiB).
const MaxStreamSize = 32 << 20

// ErrStreamTooLarge reports a stream longer than MaxStreamSize.
var ErrStreamTooLarge = errors.New("the streamed answer exceeds 32 MiB")

// LimitStream returns r reading at most MaxStreamSize bytes; past them it
// fails with ErrStreamTooLarge.
func LimitStream(r io.Reader) io.Reader { return &limited{r: r, n: MaxStreamSize} }

type limited struct {
	r io.Reader
	n int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, ErrStreamTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

// Event is one Server-Sent Event: its event name ("" when the stream names
// none) and its data lines joined with "\n".
type Event struct {
	Name string
	Data string
}

// ErrLineTooLong reports an SSE line longer than MaxEventSize.
var ErrLineTooLong = errors.New("server-sent event line too long")

// SSEReader reads Server-Sent Events as the WHATWG EventSource rules say:
// lines end with LF, CRLF or CR; a line starting with ':' is a comment (a
// keep-alive); "event:" and "data:" fields (one optional space after the
// colon) build an event that a blank line dispatches; "id:" and "retry:"
// and unknown fields are ignored; an event with no data line is not
// dispatched.
type SSEReader struct {
	r    *bufio.Reader
	line []byte
}

// NewSSEReader reads events from r.
func NewSSEReader(r io.Reader) *SSEReader {
	return &SSEReader{r: bufio.NewReaderSize(r, 32<<10)}
}

// Next returns the next event. At the end of the stream it returns io.EOF
// when the stream ended between events, and io.ErrUnexpectedEOF when it
// ended inside one (an event without its blank line); any read error is
// returned as it is.
func (s *SSEReader) Next() (Event, error) {
	var ev Event
	var data strings.Builder
	hasData, partial := false, false
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && (partial || len(line) > 0) {
				return Event{}, io.ErrUnexpectedEOF
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if hasData {
				ev.Data = data.String()
				return ev, nil
			}
			ev, partial = Event{}, false
			continue
		}
		if line[0] == ':' {
			continue
		}
		partial = true
		field, value, found := bytes.Cut(line, []byte{':'})
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "event":
			ev.Name = string(value)
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.Write(value)
			hasData = true
		}
	}
}

// readLine returns the next line without its terminator.
func (s *SSEReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		b, err := s.r.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) && len(s.line) > 0 {
				return s.line, io.EOF
			}
			return nil, err
		}
		switch b {
		case '\n':
			return s.line, nil
		case '\r':
			if next, err := s.r.Peek(1); err == nil && next[0] == '\n' {
				_, _ = s.r.ReadByte()
			}
			return s.line, nil
		}
		if len(s.line) >= MaxEventSize {
			return nil, ErrLineTooLong
		}
		s.line = append(s.line, b)
	}
}

// ParseRetryAfter reads a Retry-After header: seconds (possibly
// fractional) or an HTTP date, relative to now.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
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

// Backoff is the wait before retry attempt+1: Retry-After when the answer
// has one (capped at maxWait), else exponential with full jitter between
// minWait/2 and maxWait.
func Backoff(attempt int, retryAfter string, minWait, maxWait time.Duration) time.Duration {
	if d, ok := ParseRetryAfter(retryAfter, time.Now()); ok {
		return min(d, maxWait)
	}
	d := minWait << attempt
	if d <= 0 || d > maxWait {
		d = maxWait
	}
	return minWait/2 + time.Duration(rand.Int64N(int64(d)))
}

// Retry runs attempt until it succeeds, fails with an answer that is not
// retryable, has been retried maxRetries times or ctx is done; between
// attempts it waits Backoff (honouring the answer's Retry-After), having
// first reported the retry to ctx's reporter (bindings.ReportModelRetry).
// A ctx that ends during a wait returns cancelled(last), the error of the
// attempt whose retry was cancelled.
func Retry(ctx context.Context, maxRetries int, minWait, maxWait time.Duration,
	attempt func() (retryable bool, retryAfter string, err error), cancelled func(last error) error) error {
	for n := 0; ; n++ {
		retryable, retryAfter, err := attempt()
		if err == nil {
			return nil
		}
		if !retryable || n >= maxRetries || ctx.Err() != nil {
			return err
		}
		wait := Backoff(n, retryAfter, minWait, maxWait)
		reportRetry(ctx, n+1, retryAfter, wait, err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return cancelled(err)
		case <-t.C:
		}
	}
}

// reportRetry tells the retry reporter of ctx (bindings.ReportModelRetry)
// that attempt failed with err and is sent again after wait: with the
// answer's HTTP status when err is a *agents.ModelInvocationError that
// has one, and the wait its Retry-After asked for.
func reportRetry(ctx context.Context, attempt int, retryAfter string, wait time.Duration, err error) {
	r := bindings.ModelRetry{Attempt: attempt, Wait: wait, Err: err}
	var mi *agents.ModelInvocationError
	if errors.As(err, &mi) {
		r.Status = mi.Status
	}
	if d, ok := ParseRetryAfter(retryAfter, time.Now()); ok {
		r.RetryAfter = d
	}
	bindings.ReportModelRetry(ctx, r)
}

// NameMap maps tool ids to function names an API accepts
// (^[a-zA-Z0-9_-]{1,64}$) and back. It is built per request from the
// offered tools, so it is reversible even when two ids encode to the same
// name. It is not safe for concurrent use.
type NameMap struct {
	toWire map[string]string
	toID   map[string]string
}

// NewNameMap maps the given tool ids.
func NewNameMap(ids []string) NameMap {
	m := NameMap{toWire: make(map[string]string, len(ids)), toID: make(map[string]string, len(ids))}
	for _, id := range ids {
		m.add(id)
	}
	return m
}

func (m NameMap) add(id string) string {
	if w, ok := m.toWire[id]; ok {
		return w
	}
	base := Sanitize(id, 64)
	w := base
	for n := 2; ; n++ {
		if _, taken := m.toID[w]; !taken {
			break
		}
		suffix := "_" + strconv.Itoa(n)
		w = base
		if len(w)+len(suffix) > 64 {
			w = w[:64-len(suffix)]
		}
		w += suffix
	}
	m.toWire[id], m.toID[w] = w, id
	return w
}

// Encode returns the wire name of id. An id not offered (a call in the
// history to a tool no longer offered) is encoded the same way, so the
// model sees a consistent name.
func (m NameMap) Encode(id string) string {
	if w, ok := m.toWire[id]; ok {
		return w
	}
	return m.add(id)
}

// Decode returns the tool id of a wire name (the name itself when it maps
// to none).
func (m NameMap) Decode(wire string) string {
	if id, ok := m.toID[wire]; ok {
		return id
	}
	return wire
}

// Sanitize replaces every character outside [a-zA-Z0-9_-] with '_' and
// truncates to n bytes; an empty result is "tool".
func Sanitize(id string, n int) string {
	var b strings.Builder
	for _, r := range id {
		if b.Len() >= n {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if s == "" {
		s = "tool"
	}
	return s
}
