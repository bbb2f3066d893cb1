package modelhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

func TestSSEReader(t *testing.T) {
	in := ": keep-alive\r\n\r\nevent: ping\ndata: {\"type\": \"ping\"}\n\n" +
		"data:first\rdata: second\r\nid: 7\nretry: 10\n\n" +
		"event: empty\n\n" + // no data: not dispatched
		"data: [DONE]\n\n"
	r := NewSSEReader(strings.NewReader(in))
	var got []Event
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	want := []Event{{Name: "ping", Data: `{"type": "ping"}`}, {Data: "first\nsecond"}, {Data: "[DONE]"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestSSEReaderCutInsideAnEvent(t *testing.T) {
	r := NewSSEReader(strings.NewReader("data: {\"a\":1}\n\ndata: {\"b\""))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestNameMapIsReversibleOnCollision(t *testing.T) {
	long := strings.Repeat("x", 80)
	m := ToolNames([]bindings.ToolDefinition{{Name: "a.b"}, {Name: "a_b"}, {Name: long}})
	for _, id := range []string{"a.b", "a_b", long} {
		w := m.Encode(id)
		if len(w) > 64 || strings.ContainsAny(w, ".") {
			t.Errorf("Encode(%q) = %q", id, w)
		}
		if got := m.Decode(w); got != id {
			t.Errorf("Decode(Encode(%q)) = %q", id, got)
		}
	}
	if m.Encode("a.b") == m.Encode("a_b") {
		t.Error("two ids share a wire name")
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"2", 2 * time.Second, true},
		{"0.5", 500 * time.Millisecond, true},
		{now.Add(3 * time.Second).Format(http.TimeFormat), 3 * time.Second, true},
		{"", 0, false},
		{"soon", 0, false},
	} {
		got, ok := ParseRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestLimitStream(t *testing.T) {
	n, err := io.Copy(io.Discard, LimitStream(io.LimitReader(zeros{}, MaxStreamSize+10)))
	if !errors.Is(err, ErrStreamTooLarge) || n != MaxStreamSize {
		t.Fatalf("read %d, err = %v; want %d and ErrStreamTooLarge", n, err, MaxStreamSize)
	}
	if n, err := io.Copy(io.Discard, LimitStream(strings.NewReader("data: x\n\n"))); err != nil || n != 9 {
		t.Fatalf("a short stream: %d, %v", n, err)
	}
}

// FuzzSSEReader: any input ends in events and then an error, without a
// panic, each event's data a part of the input.
func FuzzSSEReader(f *testing.F) {
	f.Add("event: ping\ndata: {}\n\n")
	f.Add(": keep-alive\r\n\r\ndata: a\rdata: b\n\ndata: [DONE]\n\n")
	f.Add("data")
	f.Fuzz(func(t *testing.T, in string) {
		r := NewSSEReader(strings.NewReader(in))
		for i := 0; ; i++ {
			ev, err := r.Next()
			if err != nil {
				return
			}
			if len(ev.Data) > len(in) || i > len(in) {
				t.Fatalf("event %d larger than the input: %q", i, ev.Data)
			}
		}
	})
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestRetryReportsEachRetryBeforeItsWait: every failed attempt that is
// sent again is reported to the context's reporter, with its number, the
// answer's status and Retry-After and the chosen wait; the last attempt
// and an attempt that is not retryable are not (nothing is sent again).
func TestRetryReportsEachRetryBeforeItsWait(t *testing.T) {
	var got []bindings.ModelRetry
	ctx := bindings.WithModelRetryReporter(t.Context(), func(_ context.Context, r bindings.ModelRetry) { got = append(got, r) })
	fail := func(status int) error {
		return &agents.ModelInvocationError{Provider: "p", Model: "m", Status: status, Message: "busy"}
	}
	calls := 0
	err := Retry(ctx, 5, time.Millisecond, 5*time.Millisecond, func() (bool, string, error) {
		calls++
		switch calls {
		case 1:
			return true, "0.003", fail(429)
		case 2:
			return true, "", errors.New("connection reset")
		}
		return false, "", nil
	}, func(last error) error { return last })
	if err != nil || calls != 3 {
		t.Fatalf("Retry = %v after %d calls", err, calls)
	}
	if len(got) != 2 {
		t.Fatalf("reports = %+v, want 2", got)
	}
	if r := got[0]; r.Attempt != 1 || r.Status != 429 || r.RetryAfter != 3*time.Millisecond || r.Wait != 3*time.Millisecond || agents.CodeOf(r.Err) != agents.CodeModelInvocationFailed {
		t.Errorf("first report = %+v", r)
	}
	if r := got[1]; r.Attempt != 2 || r.Status != 0 || r.RetryAfter != 0 || r.Wait <= 0 || r.Wait > 5*time.Millisecond || r.Err == nil {
		t.Errorf("second report = %+v", r)
	}

	got = nil
	calls = 0
	err = Retry(ctx, 2, time.Millisecond, time.Millisecond, func() (bool, string, error) {
		calls++
		return true, "", fail(503)
	}, func(last error) error { return last })
	if err == nil || calls != 3 || len(got) != 2 || got[1].Attempt != 2 {
		t.Errorf("exhausted: err %v, %d calls, reports %+v; want 3 calls and 2 reports", err, calls, got)
	}

	got = nil
	_ = Retry(ctx, 2, time.Millisecond, time.Millisecond, func() (bool, string, error) { return false, "", fail(400) }, func(last error) error { return last })
	if len(got) != 0 {
		t.Errorf("a refusal that is not retried was reported: %+v", got)
	}

	// Without a reporter a retry is only a wait.
	calls = 0
	if err := Retry(t.Context(), 1, time.Millisecond, time.Millisecond, func() (bool, string, error) {
		calls++
		if calls == 1 {
			return true, "", fail(500)
		}
		return false, "", nil
	}, func(last error) error { return last }); err != nil || calls != 2 {
		t.Errorf("without a reporter: %v after %d calls", err, calls)
	}
}
