package pack

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	agents "github.com/kindgi/agents"
)

const testToken = "s3cret"

// fakeService is an httptest pack service whose answers are scripted per
// attempt. It checks that every request the client sends is a valid
// request message and every answer it writes is a valid response.
type fakeService struct {
	t        *testing.T
	attempts atomic.Int32
	// answer writes the answer of the n-th attempt (1-based).
	answer func(w http.ResponseWriter, r *http.Request, n int, body []byte)
	last   atomic.Pointer[http.Request]
}

func newFakeService(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, n int, body []byte)) (*fakeService, *httptest.Server) {
	f := &fakeService{t: t, answer: answer}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(f.attempts.Add(1))
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("reading the request: %v", err)
			return
		}
		if r.Method == http.MethodPost {
			if issues := ValidateRequest(body); issues != nil {
				t.Errorf("the client sent an invalid request %s: %v", body, issues)
			}
		}
		f.last.Store(r.Clone(context.Background()))
		f.answer(w, r, n, body)
	}))
	t.Cleanup(srv.Close)
	return f, srv
}

// writeMsg writes msg as a 200 answer after checking it is a valid
// response (or info) message.
func writeMsg(t *testing.T, w http.ResponseWriter, msg any) {
	t.Helper()
	b, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if issues := ValidateMessage(b); issues != nil {
		t.Errorf("the test service wrote an invalid message %s: %v", b, issues)
	}
	w.Header().Set("Content-Type", ContentType)
	w.Write(b)
}

func echoResult(t *testing.T, w http.ResponseWriter, body []byte) {
	var inv ToolInvoke
	if err := json.Unmarshal(body, &inv); err != nil {
		t.Fatal(err)
	}
	writeMsg(t, w, ToolResult{V: Version, Kind: KindResult, Output: inv.Input})
}

func testInvoke() InvokeRequest {
	return InvokeRequest{ToolID: "demo.echo", Version: "1.0.0", Input: json.RawMessage(`{"text":"hi"}`),
		Ctx: CallContext{TenantID: "t1", RunID: "run-1", RequestID: "call-1"}}
}

func TestClientInvokeSendsHeaders(t *testing.T) {
	f, srv := newFakeService(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) { echoResult(t, w, body) })
	c := NewClient(srv.URL, testToken, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	out, err := c.Invoke(ctx, testInvoke())
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"text":"hi"}` {
		t.Errorf("output = %s", out)
	}
	r := f.last.Load()
	if r.Method != http.MethodPost || r.URL.Path != PathInvoke {
		t.Errorf("request = %s %s", r.Method, r.URL.Path)
	}
	want := map[string]string{
		HeaderToken: testToken, HeaderProtocol: "2", HeaderRunID: "run-1", HeaderRequestID: "call-1", "Content-Type": ContentType,
	}
	for k, v := range want {
		if got := r.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	if r.Header.Get("Authorization") != "" {
		t.Errorf("Authorization was sent")
	}
	ms, err := strconv.Atoi(r.Header.Get(HeaderTimeoutMs))
	if err != nil || ms <= 4000 || ms > 5000 {
		t.Errorf("%s = %q, want the context's remaining 5 s in ms", HeaderTimeoutMs, r.Header.Get(HeaderTimeoutMs))
	}

	// Without a deadline there is no timeout header: the service default applies.
	if _, err := c.Invoke(t.Context(), testInvoke()); err != nil {
		t.Fatal(err)
	}
	if v, ok := f.last.Load().Header[http.CanonicalHeaderKey(HeaderTimeoutMs)]; ok {
		t.Errorf("%s = %v without a deadline", HeaderTimeoutMs, v)
	}
}

func TestClientInvokeNilInputSendsEmptyObject(t *testing.T) {
	var got atomic.Value
	_, srv := newFakeService(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		var inv ToolInvoke
		json.Unmarshal(body, &inv)
		got.Store(string(inv.Input))
		echoResult(t, w, body)
	})
	req := testInvoke()
	req.Input = nil
	if _, err := NewClient(srv.URL, testToken, nil).Invoke(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if got.Load() != "{}" {
		t.Errorf("input sent = %v, want {}", got.Load())
	}
}

func TestClientStatusCodes(t *testing.T) {
	tests := []struct {
		status int
		code   string
	}{
		{http.StatusUnauthorized, CodeUnauthorized},
		{http.StatusNotFound, CodeNotFound},
		{http.StatusMethodNotAllowed, CodeMethodNotAllowed},
		{http.StatusRequestEntityTooLarge, CodePayloadTooLarge},
		{http.StatusUnsupportedMediaType, CodeUnsupportedMediaType},
		{http.StatusInternalServerError, CodeServiceError},
		{http.StatusBadGateway, CodeServiceError},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			f, srv := newFakeService(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
				http.Error(w, "nope", tt.status)
			})
			c := NewClient(srv.URL, testToken, nil)
			_, err := c.Invoke(t.Context(), testInvoke())
			var pe *Error
			if !errors.As(err, &pe) || pe.Status != tt.status || pe.Code() != tt.code || agents.CodeOf(err) != tt.code {
				t.Errorf("Invoke err = %v, want status %d code %s", err, tt.status, tt.code)
			}
			if _, err := c.Info(t.Context()); agents.CodeOf(err) != tt.code {
				t.Errorf("Info err = %v, want %s", err, tt.code)
			}
			if err := c.Readyz(t.Context()); agents.CodeOf(err) != tt.code {
				t.Errorf("Readyz err = %v, want %s", err, tt.code)
			}
			if n := f.attempts.Load(); n != 3 {
				t.Errorf("attempts = %d, want one per call", n)
			}
		})
	}
}

func TestClientInvalidResponses(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{"not JSON", `<html>`},
		{"wrong version", `{"v":1,"kind":"result","output":{}}`},
		{"wrong kind for an invoke", `{"v":2,"kind":"check-result","result":{"passed":true}}`},
		{"unknown error code", `{"v":2,"kind":"error","code":"weird","message":"m"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newFakeService(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) { io.WriteString(w, tt.body) })
			_, err := NewClient(srv.URL, testToken, nil).Invoke(t.Context(), testInvoke())
			if agents.CodeOf(err) != CodeInvalidResponse {
				t.Errorf("err = %v, want %s", err, CodeInvalidResponse)
			}
		})
	}
}

func TestClientResponseTooLarge(t *testing.T) {
	_, srv := newFakeService(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		writeMsg(t, w, ToolResult{V: Version, Kind: KindResult, Output: json.RawMessage(`{"text":"0123456789"}`)})
	})
	_, err := NewClient(srv.URL, testToken, &ClientOptions{MaxResponseBytes: 16}).Invoke(t.Context(), testInvoke())
	if agents.CodeOf(err) != CodeInvalidResponse {
		t.Errorf("err = %v, want %s", err, CodeInvalidResponse)
	}
}

func TestClientDeadlinePassed(t *testing.T) {
	f, srv := newFakeService(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) { echoResult(t, w, body) })
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	_, err := NewClient(srv.URL, testToken, nil).Invoke(ctx, testInvoke())
	if !errors.Is(err, context.DeadlineExceeded) || agents.CodeOf(err) != CodeDeadlineExceeded {
		t.Errorf("err = %v, want deadline-exceeded", err)
	}
	if n := f.attempts.Load(); n != 0 {
		t.Errorf("attempts = %d, want none", n)
	}
}

func TestClientCheck(t *testing.T) {
	f, srv := newFakeService(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		var ci CheckInvoke
		if err := json.Unmarshal(body, &ci); err != nil {
			t.Fatal(err)
		}
		if ci.Check.ID != "demo.no-digits" || string(ci.Config) != `{"max":1}` {
			t.Errorf("check-invoke = %+v", ci)
		}
		writeMsg(t, w, CheckResult{V: Version, Kind: KindCheckResult, Result: CheckOutcome{Passed: false, Reason: "has digits",
			Extra: map[string]json.RawMessage{"score": json.RawMessage(`1`)}}})
	})
	c := NewClient(srv.URL, testToken, nil)
	got, err := c.Check(t.Context(), "demo.no-digits", json.RawMessage(`{"max":1}`), json.RawMessage(`{"runId":"run-9","response":{"content":"a1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := CheckOutcome{Passed: false, Reason: "has digits", Extra: map[string]json.RawMessage{"score": json.RawMessage(`1`)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if r := f.last.Load(); r.Header.Get(HeaderRunID) != "run-9" || r.Header.Get(HeaderToken) != testToken {
		t.Errorf("headers = %v", r.Header)
	}
}

func TestClientCheckError(t *testing.T) {
	_, srv := newFakeService(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		writeMsg(t, w, NewError(CodeUnknownCheck, "no such check"))
	})
	_, err := NewClient(srv.URL, testToken, nil).Check(t.Context(), "x", nil, json.RawMessage(`{}`))
	if agents.CodeOf(err) != CodeUnknownCheck {
		t.Errorf("err = %v, want unknown-check", err)
	}
}

func TestClientInfoAndProbes(t *testing.T) {
	info := Info{Protocol: Version, PackID: "demo", PackVersion: "1.0.0", ArtifactVersion: "art-1",
		Tools: []InfoTool{{ID: "demo.echo", Version: "1.0.0"}}, Checks: []string{"demo.no-digits"}, MissingEnv: []string{"DEMO_REGION"}}
	ready := atomic.Bool{}
	f, srv := newFakeService(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		switch r.URL.Path {
		case PathInfo:
			if r.Method != http.MethodGet || r.Header.Get(HeaderToken) != testToken {
				t.Errorf("info request = %s with token %q", r.Method, r.Header.Get(HeaderToken))
			}
			writeMsg(t, w, info)
		case PathHealthz:
			w.WriteHeader(http.StatusOK)
		case PathReadyz:
			if r.Header.Get(HeaderToken) != "" {
				t.Errorf("readyz carried the token")
			}
			if !ready.Load() {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusOK)
		}
	})
	c := NewClient(srv.URL+"/", testToken, nil)
	got, err := c.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(info, got); diff != "" {
		t.Errorf("info (-want +got):\n%s", diff)
	}
	if err := c.Healthz(t.Context()); err != nil {
		t.Errorf("Healthz = %v", err)
	}
	before := f.attempts.Load()
	if err := c.Readyz(t.Context()); agents.CodeOf(err) != CodeUnavailable {
		t.Errorf("Readyz before ready = %v, want unavailable", err)
	}
	if n := f.attempts.Load() - before; n != 1 {
		t.Errorf("Readyz attempts = %d, want 1 (probes are not retried)", n)
	}
	ready.Store(true)
	if err := c.Readyz(t.Context()); err != nil {
		t.Errorf("Readyz when ready = %v", err)
	}
}

func TestClientInvalidInfo(t *testing.T) {
	_, srv := newFakeService(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		io.WriteString(w, `{"protocol":2,"packId":"p"}`)
	})
	if _, err := NewClient(srv.URL, testToken, nil).Info(t.Context()); agents.CodeOf(err) != CodeInvalidResponse {
		t.Errorf("err = %v, want invalid-response", err)
	}
}

func TestErrorMessageString(t *testing.T) {
	e := NewError(CodeUnknownTool, "no tool x")
	if got := e.String(); got != "unknown-tool: no tool x" {
		t.Errorf("String = %q", got)
	}
	e.ToolID = "x"
	if got := e.String(); got != "x: unknown-tool: no tool x" {
		t.Errorf("String = %q", got)
	}
}
