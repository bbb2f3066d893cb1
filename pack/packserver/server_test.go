package packserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/examples/packservice/demo"
	"github.com/kindgi/agents/pack"
	"github.com/kindgi/agents/pack/packserver"
)

func TestTransportStatuses(t *testing.T) {
	h := newHarness(t, nil)
	echo := toolCall("demo.echo", "r1", map[string]any{"text": "hi"})
	big := bytes.Repeat([]byte(" "), pack.MaxBodyBytes+1)
	tests := []struct {
		name       string
		method     string
		path       string
		header     map[string]string
		body       io.Reader
		want       int
		wantAllow  string
		wantHeader string // a header the answer must carry
	}{
		{name: "healthz without token", method: "GET", path: "/healthz", want: 200},
		{name: "readyz without token", method: "GET", path: "/readyz", want: 200},
		{name: "healthz HEAD", method: "HEAD", path: "/healthz", want: 200},
		{name: "info with token", method: "GET", path: "/v1/info", header: map[string]string{pack.HeaderToken: testToken}, want: 200},
		{name: "info without token", method: "GET", path: "/v1/info", want: 401},
		{name: "info with wrong token", method: "GET", path: "/v1/info", header: map[string]string{pack.HeaderToken: testToken + "x"}, want: 401},
		{name: "info with a token prefix", method: "GET", path: "/v1/info", header: map[string]string{pack.HeaderToken: testToken[:5]}, want: 401},
		{name: "info with Authorization only", method: "GET", path: "/v1/info", header: map[string]string{"Authorization": "Bearer " + testToken}, want: 401},
		{name: "invoke without token", method: "POST", path: "/v1/invoke", header: map[string]string{"Content-Type": "application/json"}, body: bytes.NewReader(echo), want: 401},
		{name: "invoke with Authorization only", method: "POST", path: "/v1/invoke", header: map[string]string{"Content-Type": "application/json", "Authorization": testToken}, body: bytes.NewReader(echo), want: 401},
		{name: "invoke text/plain", method: "POST", path: "/v1/invoke", header: map[string]string{pack.HeaderToken: testToken, "Content-Type": "text/plain"}, body: bytes.NewReader(echo), want: 415},
		{name: "invoke without content type", method: "POST", path: "/v1/invoke", header: map[string]string{pack.HeaderToken: testToken}, body: bytes.NewReader(echo), want: 415},
		{name: "invoke json with charset", method: "POST", path: "/v1/invoke", header: map[string]string{pack.HeaderToken: testToken, "Content-Type": "application/json; charset=utf-8"}, body: bytes.NewReader(echo), want: 200, wantHeader: pack.HeaderDurationMs},
		{name: "invoke over 10 MiB", method: "POST", path: "/v1/invoke", header: map[string]string{pack.HeaderToken: testToken, "Content-Type": "application/json"}, body: bytes.NewReader(big), want: 413},
		{name: "invoke over 10 MiB chunked", method: "POST", path: "/v1/invoke", header: map[string]string{pack.HeaderToken: testToken, "Content-Type": "application/json"}, body: io.MultiReader(bytes.NewReader(big)), want: 413},
		{name: "GET invoke", method: "GET", path: "/v1/invoke", header: map[string]string{pack.HeaderToken: testToken}, want: 405, wantAllow: "POST"},
		{name: "POST info", method: "POST", path: "/v1/info", header: map[string]string{pack.HeaderToken: testToken}, want: 405, wantAllow: "GET, HEAD"},
		{name: "POST readyz", method: "POST", path: "/readyz", want: 405, wantAllow: "GET, HEAD"},
		{name: "unknown path", method: "GET", path: "/v1/nothing", want: 404},
		{name: "trailing slash", method: "POST", path: "/v1/invoke/", header: map[string]string{pack.HeaderToken: testToken}, want: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tt.method, h.http.URL+tt.path, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			res, err := h.http.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.want {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tt.want, body)
			}
			if got := res.Header.Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow = %q, want %q", got, tt.wantAllow)
			}
			if tt.wantHeader != "" && res.Header.Get(tt.wantHeader) == "" {
				t.Errorf("no %s header", tt.wantHeader)
			}
			if tt.want == 200 && tt.path == "/v1/info" {
				if issues := pack.ValidateInfo(body); len(issues) > 0 {
					t.Errorf("info is invalid: %v", issues)
				}
			}
		})
	}
	if got := h.probe.count("r1"); got != 0 {
		t.Errorf("refused calls ran %d times", got)
	}
}

func TestInvokeOutcomes(t *testing.T) {
	h := newHarness(t, nil)
	ctx := map[string]any{"tenantId": "t1", "runId": "run1"}
	raw := func(v any) []byte { b, _ := json.Marshal(v); return b }
	tests := []struct {
		name     string
		body     []byte
		headers  []string
		wantKind string
		wantCode string
		want     func(t *testing.T, m message)
	}{
		{name: "echo", body: toolCall("demo.echo", "", map[string]any{"text": "héllo"}), wantKind: "result",
			want: func(t *testing.T, m message) {
				if diff := cmp.Diff(`{"text":"héllo"}`, string(m.Output)); diff != "" {
					t.Error(diff)
				}
			}},
		{name: "echo at its version", body: raw(map[string]any{"v": 2, "kind": "invoke", "tool": map[string]any{"id": "demo.echo", "version": "1.0.0"}, "input": map[string]any{"text": "a"}, "ctx": ctx}), wantKind: "result"},
		{name: "version mismatch", body: raw(map[string]any{"v": 2, "kind": "invoke", "tool": map[string]any{"id": "demo.echo", "version": "2.0.0"}, "input": map[string]any{"text": "a"}, "ctx": ctx}), wantKind: "error", wantCode: pack.CodeToolVersionMismatch,
			want: func(t *testing.T, m message) {
				if m.ToolID != "demo.echo" {
					t.Errorf("toolId %q", m.ToolID)
				}
			}},
		{name: "input validation", body: toolCall("demo.echo", "", map[string]any{"text": 5, "extra": true}), wantKind: "error", wantCode: pack.CodeInputValidationFailed,
			want: func(t *testing.T, m message) {
				want := []pack.Issue{
					{InstancePath: "", SchemaPath: "#/additionalProperties", Keyword: "additionalProperties", Params: map[string]any{"additionalProperty": "extra"}, Message: "must NOT have additional properties"},
					{InstancePath: "/text", SchemaPath: "#/properties/text/type", Keyword: "type", Params: map[string]any{"type": "string"}, Message: "must be string"},
				}
				if diff := cmp.Diff(want, m.Issues); diff != "" {
					t.Errorf("issues (-want +got):\n%s", diff)
				}
			}},
		{name: "input missing property", body: toolCall("demo.sleep", "", map[string]any{}), wantKind: "error", wantCode: pack.CodeInputValidationFailed,
			want: func(t *testing.T, m message) {
				want := []pack.Issue{{InstancePath: "", SchemaPath: "#/required", Keyword: "required", Params: map[string]any{"missingProperty": "ms"}, Message: "must have required property 'ms'"}}
				if diff := cmp.Diff(want, m.Issues); diff != "" {
					t.Errorf("issues (-want +got):\n%s", diff)
				}
			}},
		{name: "input below minimum", body: toolCall("demo.sleep", "", map[string]any{"ms": -1}), wantKind: "error", wantCode: pack.CodeInputValidationFailed,
			want: func(t *testing.T, m message) {
				if len(m.Issues) != 1 || m.Issues[0].Keyword != "minimum" || m.Issues[0].InstancePath != "/ms" {
					t.Errorf("issues %+v", m.Issues)
				}
			}},
		{name: "output validation", body: toolCall("demo.bad-output", "", map[string]any{}), wantKind: "error", wantCode: pack.CodeOutputValidationFailed,
			want: func(t *testing.T, m message) {
				want := []pack.Issue{{InstancePath: "/count", SchemaPath: "#/properties/count/type", Keyword: "type", Params: map[string]any{"type": "integer"}, Message: "must be integer"}}
				if diff := cmp.Diff(want, m.Issues); diff != "" {
					t.Errorf("issues (-want +got):\n%s", diff)
				}
			}},
		{name: "output not JSON", body: toolCall("probe.raw", "", map[string]any{"raw": `{"a":`}), wantKind: "error", wantCode: pack.CodeOutputValidationFailed},
		{name: "output with trailing data", body: toolCall("probe.raw", "", map[string]any{"raw": `{} {}`}), wantKind: "error", wantCode: pack.CodeOutputValidationFailed},
		{name: "raw output passes through", body: toolCall("probe.raw", "", map[string]any{"raw": `{"a": [1, 2]}`}), wantKind: "result",
			want: func(t *testing.T, m message) {
				if string(m.Output) != `{"a": [1, 2]}` {
					t.Errorf("output %s", m.Output)
				}
			}},
		{name: "handler error", body: toolCall("demo.fail", "", map[string]any{}), wantKind: "error", wantCode: pack.CodeHandlerThrow,
			want: func(t *testing.T, m message) {
				if m.Cause == nil || !strings.Contains(m.Cause.Message, "boom") || m.Cause.Name == "" || !strings.Contains(m.Message, "boom") {
					t.Errorf("cause %+v, message %q", m.Cause, m.Message)
				}
			}},
		{name: "handler panic", body: toolCall("probe.panic", "", map[string]any{}), wantKind: "error", wantCode: pack.CodeHandlerThrow,
			want: func(t *testing.T, m message) {
				if m.Cause == nil || m.Cause.Name != "panic" || m.Cause.Message != "kaboom" || !strings.Contains(m.Cause.Stack, "goroutine") {
					t.Errorf("cause %+v", m.Cause)
				}
			}},
		{name: "check panic", body: []byte(`{"v":2,"kind":"check-invoke","check":{"id":"probe.check-panic"},"config":{},"trace":{}}`), wantKind: "error", wantCode: pack.CodeHandlerThrow,
			want: func(t *testing.T, m message) {
				if m.CheckID != "probe.check-panic" || m.Cause == nil || m.Cause.Message != "check exploded" {
					t.Errorf("checkId %q cause %+v", m.CheckID, m.Cause)
				}
			}},
		{name: "deadline", body: toolCall("demo.sleep", "", map[string]any{"ms": 5000}), headers: []string{pack.HeaderTimeoutMs, "30"}, wantKind: "error", wantCode: pack.CodeDeadlineExceeded},
		{name: "zero deadline", body: toolCall("demo.echo", "", map[string]any{"text": "x"}), headers: []string{pack.HeaderTimeoutMs, "0"}, wantKind: "error", wantCode: pack.CodeDeadlineExceeded},
		{name: "bad timeout header", body: toolCall("demo.echo", "", map[string]any{"text": "x"}), headers: []string{pack.HeaderTimeoutMs, "soon"}, wantKind: "error", wantCode: pack.CodeInvalidRequest},
		{name: "sleep within deadline", body: toolCall("demo.sleep", "", map[string]any{"ms": 5}), headers: []string{pack.HeaderTimeoutMs, "5000"}, wantKind: "result"},
		{name: "unknown tool", body: toolCall("demo.nope", "", map[string]any{}), wantKind: "error", wantCode: pack.CodeUnknownTool,
			want: func(t *testing.T, m message) {
				if m.ToolID != "demo.nope" {
					t.Errorf("toolId %q", m.ToolID)
				}
			}},
		{name: "unknown check", body: []byte(`{"v":2,"kind":"check-invoke","check":{"id":"nope"},"config":{},"trace":{}}`), wantKind: "error", wantCode: pack.CodeUnknownCheck},
		{name: "check passes", body: []byte(`{"v":2,"kind":"check-invoke","check":{"id":"demo.no-digits"},"config":{},"trace":{"response":{"content":"no digits here"}}}`), wantKind: "check-result",
			want: func(t *testing.T, m message) {
				if !m.Result.Passed {
					t.Error("not passed")
				}
			}},
		{name: "check fails", body: []byte(`{"v":2,"kind":"check-invoke","check":{"id":"demo.no-digits"},"config":{},"trace":{"response":{"content":"call 555"}}}`), wantKind: "check-result",
			want: func(t *testing.T, m message) {
				if m.Result.Passed || m.Result.Reason == "" {
					t.Errorf("result %+v", m.Result)
				}
			}},
		{name: "bad JSON", body: []byte(`{"v":2,`), wantKind: "error", wantCode: pack.CodeInvalidRequest},
		{name: "protocol v1", body: []byte(`{"v":1,"kind":"invoke","tool":{"id":"demo.echo"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`), wantKind: "error", wantCode: pack.CodeInvalidRequest},
		{name: "unknown kind", body: []byte(`{"v":2,"kind":"explode","tool":{"id":"demo.echo"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`), wantKind: "error", wantCode: pack.CodeInvalidRequest},
		{name: "missing ctx", body: []byte(`{"v":2,"kind":"invoke","tool":{"id":"demo.echo"},"input":{}}`), wantKind: "error", wantCode: pack.CodeInvalidRequest},
		{name: "empty body", body: []byte(``), wantKind: "error", wantCode: pack.CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := h.call(t.Context(), t, tt.body, tt.headers...)
			if m.Kind != tt.wantKind || m.Code != tt.wantCode {
				t.Fatalf("got %s %s (%s), want %s %s", m.Kind, m.Code, m.Message, tt.wantKind, tt.wantCode)
			}
			if tt.wantCode == pack.CodeInvalidRequest && len(m.Issues) == 0 {
				t.Error("invalid-request without issues")
			}
			if tt.want != nil {
				tt.want(t, m)
			}
		})
	}
	// The service survived the panics.
	m := h.call(t.Context(), t, toolCall("demo.echo", "", map[string]any{"text": "still up"}))
	if m.Kind != "result" {
		t.Fatalf("after the panics: %+v", m)
	}
}

func TestCancelledWhenCallerLeaves(t *testing.T) {
	h := newHarness(t, nil)
	// Over the network: the caller gives up, the handler's context ends.
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		req, _ := invokeRequest(ctx, h.http.URL, toolCall("probe.block", "leaver", map[string]any{}))
		res, err := h.http.Client().Do(req)
		if err == nil {
			res.Body.Close()
		}
		done <- err
	}()
	<-h.probe.started
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the request did not fail after cancel")
	}
	select {
	case err := <-h.probe.sawCtxErr:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("handler saw %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context was not cancelled")
	}

	// In process: the answer the service writes for it is cancelled.
	rctx, rcancel := context.WithCancel(t.Context())
	go func() { <-h.probe.started; rcancel() }()
	rec := invokeInProcess(rctx, h.srv, toolCall("probe.block", "leaver2", map[string]any{}))
	m, err := decodeMsg(rec.Code, rec.Header(), rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if m.Code != pack.CodeCancelled || m.ToolID != "probe.block" {
		t.Errorf("got %s %s, want error cancelled", m.Kind, m.Code)
	}
	<-h.probe.sawCtxErr
	waitFor(t, func() bool { return h.srv.InFlight() == 0 })
}

func TestDeadlineWithHandlerIgnoringContext(t *testing.T) {
	h := newHarness(t, &packserver.Options{MaxConcurrency: 1})
	start := time.Now()
	m := h.call(t.Context(), t, toolCall("probe.ignore-ctx", "slow", map[string]any{"ms": 400}), pack.HeaderTimeoutMs, "50")
	if m.Code != pack.CodeDeadlineExceeded {
		t.Fatalf("got %s %s", m.Kind, m.Code)
	}
	if d := time.Since(start); d > 350*time.Millisecond {
		t.Errorf("answered after %v; the deadline was 50 ms", d)
	}
	// The handler still runs and holds the only slot: the call is refused.
	status, hdr, body := h.post(t.Context(), t, toolCall("demo.echo", "", map[string]any{"text": "x"}))
	if status != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
		t.Errorf("while the slow handler runs: %d %s", status, body)
	}
	waitFor(t, func() bool { return h.srv.InFlight() == 0 })
	h.call(t.Context(), t, toolCall("demo.echo", "", map[string]any{"text": "x"}))
}

func TestConcurrencyCap(t *testing.T) {
	h := newHarness(t, &packserver.Options{MaxConcurrency: 2})
	var results []<-chan result
	for _, id := range []string{"a", "b"} {
		results = append(results, h.callAsync(toolCall("probe.block", id, map[string]any{})))
	}
	<-h.probe.started
	<-h.probe.started
	status, hdr, body := h.post(t.Context(), t, toolCall("probe.count", "refused", map[string]any{}))
	if status != http.StatusServiceUnavailable || hdr.Get("Retry-After") != packserver.RetryAfterSeconds {
		t.Fatalf("at the cap: %d Retry-After %q %s", status, hdr.Get("Retry-After"), body)
	}
	if n := h.probe.count("refused"); n != 0 {
		t.Fatalf("the refused call ran %d times", n)
	}
	h.probe.release <- struct{}{}
	h.probe.release <- struct{}{}
	for _, ch := range results {
		if r := <-ch; r.err != nil || r.m.Kind != "result" {
			t.Errorf("blocked call: %+v", r)
		}
	}
	// Sequential calls after the answers never meet a stale slot.
	for i := range 20 {
		status, _, body := h.post(t.Context(), t, toolCall("demo.echo", "", map[string]any{"text": "x"}))
		if status != 200 {
			t.Fatalf("call %d after release: %d %s", i, status, body)
		}
	}
}

func TestDrain(t *testing.T) {
	h := newHarness(t, nil)
	inflight := h.callAsync(toolCall("probe.block", "inflight", map[string]any{}))
	<-h.probe.started
	drained := make(chan error, 1)
	go func() { drained <- h.srv.Drain(context.Background()) }()
	waitFor(t, func() bool { return !h.srv.Ready() })

	res, err := h.http.Client().Get(h.http.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" {
		t.Errorf("readyz while draining: %d", res.StatusCode)
	}
	status, _, _ := h.post(t.Context(), t, toolCall("probe.count", "late", map[string]any{}))
	if status != 503 || h.probe.count("late") != 0 {
		t.Errorf("new invoke while draining: %d, ran %d", status, h.probe.count("late"))
	}
	select {
	case <-drained:
		t.Fatal("drain returned with a call in progress")
	case <-time.After(50 * time.Millisecond):
	}
	h.probe.release <- struct{}{}
	if r := <-inflight; r.err != nil || r.m.Kind != "result" {
		t.Errorf("in-flight call: %+v", r)
	}
	if err := <-drained; err != nil {
		t.Errorf("drain: %v", err)
	}
}

func TestDrainTimesOut(t *testing.T) {
	h := newHarness(t, nil)
	stuck := h.callAsync(toolCall("probe.block", "stuck", map[string]any{}))
	<-h.probe.started
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	if err := h.srv.Drain(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("drain: %v, want deadline exceeded", err)
	}
	h.probe.release <- struct{}{}
	if r := <-stuck; r.err != nil || r.m.Kind != "result" {
		t.Errorf("stuck call: %+v", r)
	}
}

func TestStrictEnv(t *testing.T) {
	env := map[string]string{"DEMO_REGION": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, strict := range []bool{false, true} {
		idx := testIndex(t)
		idx.StrictEnv = strict
		idx.RequiredEnv = []string{"ZED", "DEMO_REGION", "ALPHA", "ZED"}
		srv, err := packserver.New(t.Context(), idx, []packserver.Module{demo.Module(), newProbe().module()}, &packserver.Options{Token: testToken, LookupEnv: lookup})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"ALPHA", "DEMO_REGION", "ZED"}, srv.Info().MissingEnv); diff != "" {
			t.Errorf("missingEnv (-want +got):\n%s", diff)
		}
		if srv.Ready() == strict {
			t.Errorf("strict %v: ready %v", strict, srv.Ready())
		}
		rec := invokeInProcess(t.Context(), srv, toolCall("demo.echo", "", map[string]any{"text": "x"}))
		if want := map[bool]int{false: 200, true: 503}[strict]; rec.Code != want {
			t.Errorf("strict %v: invoke answered %d, want %d", strict, rec.Code, want)
		}
	}
}

func TestNewBootProblems(t *testing.T) {
	failing := packserver.Module{Name: "demo", Tools: demo.Module().Tools, Checks: demo.Module().Checks,
		Init: func(context.Context) error { return errors.New("no database") }}
	panicking := failing
	panicking.Init = func(context.Context) error { panic("init exploded") }
	noEcho := demo.Module()
	noEcho.Tools = map[string]packserver.ToolHandler{"demo.sleep": demo.Sleep}
	noCheck := demo.Module()
	noCheck.Checks = nil
	load := func() *packserver.Index { return demoIndex(t) }
	badSchema := load()
	badSchema.Tools[0].InputSchema = json.RawMessage(`{"type": 12}`)
	tests := []struct {
		name    string
		idx     *packserver.Index
		modules []packserver.Module
		token   string
		want    []string
	}{
		{"no modules registered", load(), nil, testToken, []string{`module "demo" named by the index is not registered`}},
		{"no token", load(), []packserver.Module{demo.Module()}, "", []string{"no service token"}},
		{"init fails", load(), []packserver.Module{failing}, testToken, []string{`module "demo": init failed: no database`}},
		{"init panics", load(), []packserver.Module{panicking}, testToken, []string{`module "demo": init failed: panic: init exploded`}},
		{"handlers missing", load(), []packserver.Module{noEcho}, testToken, []string{`tool "demo.echo": module "demo" has no handler`, `tool "demo.fail"`, `tool "demo.bad-output"`, `tool "demo.env"`}},
		{"check missing", load(), []packserver.Module{noCheck}, testToken, []string{`check "demo.no-digits": module "demo" has no handler`}},
		{"registered twice", load(), []packserver.Module{demo.Module(), demo.Module()}, testToken, []string{`module "demo" is registered twice`}},
		{"bad schema", badSchema, []packserver.Module{demo.Module()}, testToken, []string{`tool "demo.echo": inputSchema`}},
		{"nil index", nil, []packserver.Module{demo.Module()}, testToken, []string{"no index"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := packserver.New(t.Context(), tt.idx, tt.modules, &packserver.Options{Token: tt.token})
			var be *packserver.BootError
			if !errors.As(err, &be) {
				t.Fatalf("err = %v, want *BootError", err)
			}
			if agents.CodeOf(err) != packserver.CodeBootFailed {
				t.Errorf("code %q", agents.CodeOf(err))
			}
			all := strings.Join(be.Problems, "\n")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("problems lack %q:\n%s", w, all)
				}
			}
		})
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// panicHandler is a slog handler that fails: a fault in the service's own
// code.
type panicHandler struct{}

func (panicHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (panicHandler) Handle(context.Context, slog.Record) error { panic("log sink broke") }
func (h panicHandler) WithAttrs([]slog.Attr) slog.Handler      { return h }
func (h panicHandler) WithGroup(string) slog.Handler           { return h }

func TestServiceFailureIs500(t *testing.T) {
	h := newHarness(t, &packserver.Options{Logger: slog.New(panicHandler{})})
	status, _, body := h.post(t.Context(), t, toolCall("demo.fail", "", map[string]any{}))
	if status != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500: %s", status, body)
	}
	// The service stays up, and calls that log nothing still succeed.
	h.call(t.Context(), t, toolCall("demo.echo", "", map[string]any{"text": "x"}))
}

func TestCheckResultNotEncodable(t *testing.T) {
	idx := testIndex(t)
	idx.Modules = append(idx.Modules, "odd")
	idx.Guardrails = append(idx.Guardrails, packserver.IndexGuardrail{ID: "odd.check", Module: "odd"})
	odd := packserver.Module{Name: "odd", Checks: map[string]packserver.CheckHandler{
		"odd.check": func(context.Context, json.RawMessage, json.RawMessage) (pack.CheckOutcome, error) {
			return pack.CheckOutcome{Passed: true, Extra: map[string]json.RawMessage{"bad": json.RawMessage(`{`)}}, nil
		},
	}}
	srv, err := packserver.New(t.Context(), idx, []packserver.Module{demo.Module(), newProbe().module(), odd}, &packserver.Options{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	rec := invokeInProcess(t.Context(), srv, []byte(`{"v":2,"kind":"check-invoke","check":{"id":"odd.check"},"config":{},"trace":{}}`))
	m, err := decodeMsg(rec.Code, rec.Header(), rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if m.Code != pack.CodeOutputValidationFailed || m.CheckID != "odd.check" || len(m.Issues) != 1 {
		t.Errorf("got %+v", m)
	}
}
