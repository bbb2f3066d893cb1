package packtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/examples/packservice/demo"
	"github.com/kindgi/agents/pack"
	"github.com/kindgi/agents/pack/packserver"
	"github.com/kindgi/agents/pack/packtest"
)

const token = "packtest-token"

// service returns the demo pack service, in process.
func service(t *testing.T) http.Handler {
	t.Helper()
	idx, err := packserver.LoadIndex("../../examples/packservice/index.json")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := packserver.New(t.Context(), idx, []packserver.Module{demo.Module()}, &packserver.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func TestPackserverPasses(t *testing.T) {
	ts := httptest.NewServer(service(t))
	defer ts.Close()
	packtest.Run(t, packtest.Target{BaseURL: ts.URL, Token: token, Cases: []packtest.Case{
		{Name: "echo", Request: json.RawMessage(`{"v":2,"kind":"invoke","tool":{"id":"demo.echo"},"input":{"text":"a"},"ctx":{"tenantId":"t","runId":"r"}}`), WantKind: "result"},
		{Name: "fail", Request: map[string]any{"v": 2, "kind": "invoke", "tool": map[string]any{"id": "demo.fail"}, "input": map[string]any{}, "ctx": map[string]any{"tenantId": "t", "runId": "r"}}, WantKind: "error", WantCode: pack.CodeHandlerThrow},
	}})
}

func TestRunStartsTheTarget(t *testing.T) {
	var started, stopped bool
	h := service(t)
	t.Run("suite", func(t *testing.T) {
		packtest.Run(t, packtest.Target{Token: token, Start: func(context.Context) (string, func(), error) {
			started = true
			ts := httptest.NewServer(h)
			return ts.URL, func() { stopped = true; ts.Close() }, nil
		}})
	})
	if !started || !stopped {
		t.Errorf("started %v, stopped %v", started, stopped)
	}
}

// rewrite wraps h: before may change the request (and answer itself by
// returning true); after may change the recorded answer.
func rewrite(h http.Handler, before func(w http.ResponseWriter, r *http.Request) bool, after func(r *http.Request, rec *httptest.ResponseRecorder)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if before != nil && before(w, r) {
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if after != nil {
			after(r, rec)
		}
		maps.Copy(w.Header(), rec.Header())
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

func replaceBody(rec *httptest.ResponseRecorder, old, new string) {
	b := strings.ReplaceAll(rec.Body.String(), old, new)
	rec.Body = bytes.NewBufferString(b)
}

// TestChecksCatchFaults runs each check against a service with one fault
// and expects that check, and only a check about it, to fail.
func TestChecksCatchFaults(t *testing.T) {
	bearerAsToken := func(w http.ResponseWriter, r *http.Request) bool {
		if a := r.Header.Get("Authorization"); a != "" {
			r.Header.Set(pack.HeaderToken, strings.TrimPrefix(a, "Bearer "))
		}
		return false
	}
	mutants := []struct {
		check  string
		before func(w http.ResponseWriter, r *http.Request) bool
		after  func(r *http.Request, rec *httptest.ResponseRecorder)
	}{
		{"healthz", nil, func(r *http.Request, rec *httptest.ResponseRecorder) {
			if r.URL.Path == "/healthz" {
				rec.Code = 500
			}
		}},
		{"readyz", nil, func(r *http.Request, rec *httptest.ResponseRecorder) {
			if r.URL.Path == "/readyz" {
				rec.Code = 503
			}
		}},
		{"info-requires-token", bearerAsToken, nil},
		{"invoke-requires-token", bearerAsToken, nil},
		{"info", nil, func(r *http.Request, rec *httptest.ResponseRecorder) {
			replaceBody(rec, `"packId"`, `"packID"`)
		}},
		{"method-not-allowed", nil, func(r *http.Request, rec *httptest.ResponseRecorder) { rec.Header().Del("Allow") }},
		{"not-found", nil, func(r *http.Request, rec *httptest.ResponseRecorder) {
			if rec.Code == 404 {
				rec.Code = 400
			}
		}},
		{"unsupported-media-type", func(w http.ResponseWriter, r *http.Request) bool {
			r.Header.Set("Content-Type", "application/json")
			return false
		}, nil},
		{"media-type-parameters", func(w http.ResponseWriter, r *http.Request) bool {
			if strings.Contains(r.Header.Get("Content-Type"), ";") {
				w.WriteHeader(415)
				return true
			}
			return false
		}, nil},
		{"payload-too-large", func(w http.ResponseWriter, r *http.Request) bool {
			if r.ContentLength < 0 { // chunked: answered as a bad request
				_, _ = io.Copy(io.Discard, r.Body)
				w.WriteHeader(400)
				return true
			}
			return false
		}, nil},
		{"body-at-limit", func(w http.ResponseWriter, r *http.Request) bool {
			if r.ContentLength >= pack.MaxBodyBytes {
				w.WriteHeader(413)
				return true
			}
			return false
		}, nil},
		{"invalid-request", nil, func(r *http.Request, rec *httptest.ResponseRecorder) {
			if strings.Contains(rec.Body.String(), pack.CodeInvalidRequest) {
				rec.Code = 400
			}
		}},
		{"unknown-tool", nil, func(r *http.Request, rec *httptest.ResponseRecorder) {
			replaceBody(rec, `,"toolId":"packtest.no-such-tool"`, ``)
		}},
		{"unknown-check", nil, func(r *http.Request, rec *httptest.ResponseRecorder) {
			replaceBody(rec, pack.CodeUnknownCheck, pack.CodeUnknownTool)
		}},
		{"tool-version-mismatch", nil, func(r *http.Request, rec *httptest.ResponseRecorder) {
			replaceBody(rec, pack.CodeToolVersionMismatch, pack.CodeUnknownTool)
		}},
		// Every invoke answer must carry the duration header and be a
		// valid response message.
		{"unknown-tool", nil, func(r *http.Request, rec *httptest.ResponseRecorder) { rec.Header().Del(pack.HeaderDurationMs) }},
		{"unknown-tool", nil, func(r *http.Request, rec *httptest.ResponseRecorder) { replaceBody(rec, `"v":2`, `"v":"2"`) }},
	}
	base := service(t)
	for _, m := range mutants {
		t.Run(m.check, func(t *testing.T) {
			ts := httptest.NewServer(rewrite(base, m.before, m.after))
			defer ts.Close()
			target := packtest.Target{BaseURL: ts.URL, Token: token}
			for _, c := range packtest.Checks() {
				if c.Name != m.check {
					continue
				}
				err := c.Run(t.Context(), target)
				var f *packtest.Failure
				if !errors.As(err, &f) {
					t.Fatalf("check %s passed a faulty service (err %v)", c.Name, err)
				}
				if agents.CodeOf(err) != packtest.CodeConformanceFailed {
					t.Errorf("code %q", agents.CodeOf(err))
				}
				t.Logf("caught: %v", err)
				return
			}
			t.Fatalf("no check named %s", m.check)
		})
	}
}

func TestCaseFailures(t *testing.T) {
	ts := httptest.NewServer(service(t))
	defer ts.Close()
	echo := json.RawMessage(`{"v":2,"kind":"invoke","tool":{"id":"demo.echo"},"input":{"text":"a"},"ctx":{"tenantId":"t","runId":"r"}}`)
	target := packtest.Target{BaseURL: ts.URL, Token: token, Cases: []packtest.Case{
		{Name: "wrong kind", Request: echo, WantKind: "error"},
		{Name: "wrong code", Request: json.RawMessage(`{"v":2,"kind":"invoke","tool":{"id":"demo.fail"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`), WantKind: "error", WantCode: pack.CodeUnknownTool},
		{Name: "verify fails", Request: echo, WantKind: "result", Verify: func([]byte) error { return errors.New("nope") }},
	}}
	checks := packtest.ChecksFor(target)
	if len(checks) != len(packtest.Checks())+3 {
		t.Fatalf("%d checks", len(checks))
	}
	for _, c := range checks[len(packtest.Checks()):] {
		if err := c.Run(t.Context(), target); err == nil {
			t.Errorf("%s passed", c.Name)
		}
	}
}
