package pack

import (
	"context"
	"errors"
	"math"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	agents "github.com/kindgi/agents"
)

// Retries: a call is sent again only when it provably did not run.

// always is a count of failures that never runs out.
const always = math.MaxInt

// unavailable answers the first failures calls with 503 and Retry-After
// retryAfter, and the later ones with the echoed result.
func unavailable(t *testing.T, retryAfter string, failures int) func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
	return func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		if n <= failures {
			w.Header().Set("Retry-After", retryAfter)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		echoResult(t, w, body)
	}
}

func TestClientRetries503PerRetryAfter(t *testing.T) {
	f, srv := newFakeService(t, unavailable(t, "1", 2))
	c := NewClient(srv.URL, testToken, &ClientOptions{RetryWait: time.Millisecond})
	start := time.Now()
	out, err := c.Invoke(t.Context(), testInvoke())
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed < 2*time.Second {
		t.Errorf("two retries after Retry-After: 1 took %v, want >= 2s", elapsed)
	}
	if n := f.attempts.Load(); n != 3 {
		t.Errorf("attempts = %d, want 3", n)
	}
	if string(out) != `{"text":"hi"}` {
		t.Errorf("output = %s", out)
	}
}

func TestClientRetryAfterHTTPDate(t *testing.T) {
	f, srv := newFakeService(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		if n == 1 {
			w.Header().Set("Retry-After", time.Now().Add(time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		echoResult(t, w, body)
	})
	if _, err := NewClient(srv.URL, testToken, nil).Invoke(t.Context(), testInvoke()); err != nil {
		t.Fatal(err)
	}
	if n := f.attempts.Load(); n != 2 {
		t.Errorf("attempts = %d, want 2", n)
	}
}

func TestClientRetryAfterIsCapped(t *testing.T) {
	f, srv := newFakeService(t, unavailable(t, "3600", 1))
	c := NewClient(srv.URL, testToken, &ClientOptions{MaxRetryWait: 20 * time.Millisecond})
	start := time.Now()
	if _, err := c.Invoke(t.Context(), testInvoke()); err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("capped wait took %v", elapsed)
	}
	if n := f.attempts.Load(); n != 2 {
		t.Errorf("attempts = %d, want 2", n)
	}
}

func TestClient503RetriesRunOut(t *testing.T) {
	f, srv := newFakeService(t, unavailable(t, "0", always))
	_, err := NewClient(srv.URL, testToken, &ClientOptions{MaxRetries: 2}).Invoke(t.Context(), testInvoke())
	var pe *Error
	if !errors.As(err, &pe) || pe.Status != http.StatusServiceUnavailable || agents.CodeOf(err) != CodeUnavailable {
		t.Fatalf("err = %v, want unavailable", err)
	}
	if n := f.attempts.Load(); n != 3 {
		t.Errorf("attempts = %d, want 3 (1 + 2 retries)", n)
	}
}

func TestClient503NotRetriedPastDeadline(t *testing.T) {
	f, srv := newFakeService(t, unavailable(t, "5", always))
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	start := time.Now()
	_, err := NewClient(srv.URL, testToken, nil).Invoke(ctx, testInvoke())
	if agents.CodeOf(err) != CodeUnavailable {
		t.Fatalf("err = %v, want unavailable", err)
	}
	if time.Since(start) > 500*time.Millisecond {
		t.Errorf("the client waited %v for a retry the deadline forbids", time.Since(start))
	}
	if n := f.attempts.Load(); n != 1 {
		t.Errorf("attempts = %d, want 1", n)
	}
}

func TestClientRetryWaitHonoursCancel(t *testing.T) {
	_, srv := newFakeService(t, unavailable(t, "10", always))
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := NewClient(srv.URL, testToken, nil).Invoke(ctx, testInvoke())
	if !errors.Is(err, context.Canceled) || agents.CodeOf(err) != CodeCancelled {
		t.Fatalf("err = %v, want cancelled wrapping context.Canceled", err)
	}
}

func TestClient200ErrorNotRetried(t *testing.T) {
	f, srv := newFakeService(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		writeMsg(t, w, &ErrorMessage{V: Version, Kind: KindError, Code: CodeHandlerThrow, Message: "boom", ToolID: "demo.echo",
			Cause: &Cause{Name: "Error", Message: "boom"}})
	})
	_, err := NewClient(srv.URL, testToken, nil).Invoke(t.Context(), testInvoke())
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want *Error", err)
	}
	want := &ErrorMessage{V: Version, Kind: KindError, Code: CodeHandlerThrow, Message: "boom", ToolID: "demo.echo", Cause: &Cause{Name: "Error", Message: "boom"}}
	if diff := cmp.Diff(want, pe.Response); diff != "" {
		t.Errorf("Response (-want +got):\n%s", diff)
	}
	if pe.Status != http.StatusOK || agents.CodeOf(err) != CodeHandlerThrow || pe.Message != "boom" {
		t.Errorf("err = %#v", pe)
	}
	if n := f.attempts.Load(); n != 1 {
		t.Errorf("attempts = %d, want 1", n)
	}
}

func TestClientConnectionResetAfterSendNotRetried(t *testing.T) {
	f, srv := newFakeService(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0) // close with a reset
		}
		conn.Close()
	})
	_, err := NewClient(srv.URL, testToken, &ClientOptions{RetryWait: time.Millisecond}).Invoke(t.Context(), testInvoke())
	if agents.CodeOf(err) != CodeTransport {
		t.Fatalf("err = %v, want %s", err, CodeTransport)
	}
	if n := f.attempts.Load(); n != 1 {
		t.Errorf("attempts = %d, want 1: a call that may have run is never sent again", n)
	}
}

func TestClientDialFailureRetried(t *testing.T) {
	_, srv := newFakeService(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) { echoResult(t, w, body) })
	var dials atomic.Int32
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) <= 2 {
			return nil, errors.New("connection refused")
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	c := NewClient(srv.URL, testToken, &ClientOptions{HTTPClient: &http.Client{Transport: tr}, RetryWait: time.Millisecond})
	if _, err := c.Invoke(t.Context(), testInvoke()); err != nil {
		t.Fatal(err)
	}
	if n := dials.Load(); n != 3 {
		t.Errorf("dials = %d, want 3", n)
	}
}

func TestRetryAfter(t *testing.T) {
	c := NewClient("http://x", "", &ClientOptions{RetryWait: 7 * time.Millisecond, MaxRetryWait: 10 * time.Second})
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 7 * time.Millisecond},
		{"0", 0},
		{"3", 3 * time.Second},
		{" 2 ", 2 * time.Second},
		{"3600", 10 * time.Second},
		{"-1", 7 * time.Millisecond},
		{"soon", 7 * time.Millisecond},
		{time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat), 0},
		{time.Now().Add(time.Hour).UTC().Format(http.TimeFormat), 10 * time.Second},
	}
	for _, tt := range tests {
		if got := c.retryAfter(tt.in); got != tt.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
