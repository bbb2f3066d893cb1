package pack

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/google/go-cmp/cmp"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
)

// demoService is an httptest pack service with a few tools and a check,
// counting /v1/info hits and recording the last invoke.
type demoService struct {
	infoHits atomic.Int32
	mu       sync.Mutex
	info     Info
	invokes  []ToolInvoke
	checks   []CheckInvoke
}

func newDemoService(t *testing.T) (*demoService, string) {
	d := &demoService{info: Info{Protocol: Version, PackID: "demo", PackVersion: "1.0.0", ArtifactVersion: "art",
		Tools: []InfoTool{
			{ID: "demo.echo", Version: "1.0.0"}, {ID: "demo.echo", Version: "1.2.0"}, {ID: "demo.echo", Version: "2.0.0"},
			{ID: "demo.fail", Version: "1.0.0"}, {ID: "demo.loose"},
		},
		Checks: []string{"demo.no-digits"}}}
	_, srv := newFakeService(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		if r.URL.Path == PathInfo {
			d.infoHits.Add(1)
			d.mu.Lock()
			info := d.info
			d.mu.Unlock()
			writeMsg(t, w, info)
			return
		}
		msg, em := DecodeRequest(body)
		if em != nil {
			writeMsg(t, w, em)
			return
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		switch m := msg.(type) {
		case *ToolInvoke:
			d.invokes = append(d.invokes, *m)
			if m.Tool.ID == "demo.fail" {
				e := NewError(CodeHandlerThrow, "boom")
				e.ToolID = m.Tool.ID
				e.Cause = &Cause{Name: "Error", Message: "boom"}
				writeMsg(t, w, e)
				return
			}
			writeMsg(t, w, ToolResult{V: Version, Kind: KindResult, Output: m.Input})
		case *CheckInvoke:
			d.checks = append(d.checks, *m)
			var trace bindings.RunTrace
			if err := json.Unmarshal(m.Trace, &trace); err != nil {
				t.Errorf("trace: %v", err)
			}
			passed := !strings.ContainsFunc(trace.Response.Content, unicode.IsDigit)
			out := CheckOutcome{Passed: passed, Attributes: map[string]any{"checked": true}, Extra: map[string]json.RawMessage{"extra": json.RawMessage(`1`)}}
			if !passed {
				out.Reason = "the response contains a digit"
			}
			writeMsg(t, w, CheckResult{V: Version, Kind: KindCheckResult, Result: out})
		}
	})
	return d, srv.URL
}

func TestToolSourceResolve(t *testing.T) {
	_, url := newDemoService(t)
	src := NewToolSource(NewClient(url, testToken, nil), nil)
	tools := src.ForTenant("t1")
	tests := []struct {
		name    string
		ref     agent.ToolRef
		want    string
		wantErr string
	}{
		{"exact version", agent.ToolRef{ID: "demo.echo", Version: "1.0.0"}, "1.0.0", ""},
		{"caret range picks the highest minor", agent.ToolRef{ID: "demo.echo", Version: "^1.0.0"}, "1.2.0", ""},
		{"star picks the highest", agent.ToolRef{ID: "demo.echo", Version: "*"}, "2.0.0", ""},
		{"a versionless tool resolves to no version", agent.ToolRef{ID: "demo.loose", Version: "^1.0.0"}, "", ""},
		{"unknown id", agent.ToolRef{ID: "demo.nope", Version: "1.0.0"}, "", agents.CodeUnresolvedTool},
		{"no satisfying version", agent.ToolRef{ID: "demo.echo", Version: "^3.0.0"}, "", agents.CodeToolVersionUnresolvable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := tools.Resolve(t.Context(), tt.ref)
			if tt.wantErr != "" {
				if agents.CodeOf(err) != tt.wantErr {
					t.Fatalf("err = %v, want %s", err, tt.wantErr)
				}
				var ue *agents.ToolVersionUnresolvableError
				if errors.As(err, &ue) {
					if ue.ToolID != tt.ref.ID || !cmp.Equal(ue.Available, []string{"2.0.0", "1.2.0", "1.0.0"}) {
						t.Errorf("unresolvable error = %+v", ue)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := bindings.ToolDescriptor{ID: tt.ref.ID, Version: tt.want}
			if diff := cmp.Diff(want, d); diff != "" {
				t.Errorf("descriptor (-want +got):\n%s", diff)
			}
		})
	}
}

func TestToolSourceInfoIsCached(t *testing.T) {
	d, url := newDemoService(t)
	tools := NewToolSource(NewClient(url, testToken, nil), &ToolSourceOptions{InfoTTL: time.Hour}).ForTenant("t1")
	for range 3 {
		if _, err := tools.Resolve(t.Context(), agent.ToolRef{ID: "demo.echo", Version: "1.0.0"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := d.infoHits.Load(); n != 1 {
		t.Errorf("info hits with a TTL of an hour = %d, want 1", n)
	}
	always := NewToolSource(NewClient(url, testToken, nil), &ToolSourceOptions{InfoTTL: -1}).ForTenant("t1")
	for range 2 {
		if _, err := always.Resolve(t.Context(), agent.ToolRef{ID: "demo.echo", Version: "1.0.0"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := d.infoHits.Load(); n != 3 {
		t.Errorf("info hits without caching = %d, want 3", n)
	}
}

func TestToolSourceDescribe(t *testing.T) {
	_, url := newDemoService(t)
	src := NewToolSource(NewClient(url, testToken, nil), &ToolSourceOptions{Describe: func(d bindings.ToolDescriptor) bindings.ToolDescriptor {
		d.ID, d.Version = "ignored", "9.9.9"
		d.Description = "echoes"
		d.InputSchema = json.RawMessage(`{"type":"object"}`)
		return d
	}})
	d, err := src.ForTenant("t1").Resolve(t.Context(), agent.ToolRef{ID: "demo.echo", Version: "^1"})
	if err != nil {
		t.Fatal(err)
	}
	want := bindings.ToolDescriptor{ID: "demo.echo", Version: "1.2.0", Description: "echoes", InputSchema: json.RawMessage(`{"type":"object"}`)}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("descriptor (-want +got):\n%s", diff)
	}
}

func TestToolSourceInvoke(t *testing.T) {
	svc, url := newDemoService(t)
	tools := NewToolSource(NewClient(url, testToken, nil), nil).ForTenant("tenant-a")
	d := bindings.ToolDescriptor{ID: "demo.echo", Version: "1.0.0", Env: map[string]string{"REGION": "eu", "MODE": "a"}, Config: map[string]any{"k": "v"}}
	call := bindings.CallContext{TenantID: "tenant-a", RunID: "run-1", RequestID: "req-1", Env: map[string]string{"MODE": "b"}, Secrets: map[string]string{"API_KEY": "x"}}
	out, err := tools.Invoke(t.Context(), d, json.RawMessage(`{"text":"hi"}`), call)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"text":"hi"}` {
		t.Errorf("output = %s", out)
	}
	svc.mu.Lock()
	got := svc.invokes[len(svc.invokes)-1]
	svc.mu.Unlock()
	want := ToolInvoke{V: Version, Kind: KindInvoke, Tool: ToolRef{ID: "demo.echo", Version: "1.0.0"}, Input: json.RawMessage(`{"text":"hi"}`),
		Ctx: CallContext{TenantID: "tenant-a", RunID: "run-1", RequestID: "req-1",
			Env: map[string]any{"REGION": "eu", "MODE": "b"}, Secrets: map[string]any{"API_KEY": "x"}, Config: map[string]any{"k": "v"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("invoke sent (-want +got):\n%s", diff)
	}

	_, err = tools.Invoke(t.Context(), bindings.ToolDescriptor{ID: "demo.fail", Version: "1.0.0"}, json.RawMessage(`{}`), call)
	var pe *Error
	if !errors.As(err, &pe) || pe.Code() != CodeHandlerThrow || pe.Response == nil || pe.Response.Cause == nil {
		t.Errorf("failing tool err = %v, want handler-throw with its cause", err)
	}
}

func TestCheckSource(t *testing.T) {
	svc, url := newDemoService(t)
	src, err := NewCheckSource(t.Context(), NewClient(url, testToken, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := src.Check("demo.unknown"); ok {
		t.Errorf("an unlisted check was found")
	}
	check, ok := src.Check("demo.no-digits")
	if !ok {
		t.Fatal("demo.no-digits not found")
	}
	trace := bindings.RunTrace{RunID: "run-1", TenantID: "t1", AgentID: "a", AgentVersion: "1.0.0", Response: bindings.TraceResponse{Content: "call 555"}}
	got, err := check.Evaluate(t.Context(), nil, trace)
	if err != nil {
		t.Fatal(err)
	}
	want := bindings.CheckResult{Passed: false, Reason: "the response contains a digit", Attributes: map[string]any{"checked": true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	trace.Response.Content = "no digits here"
	if got, err := check.Evaluate(t.Context(), json.RawMessage(`{"strict":true}`), trace); err != nil || !got.Passed {
		t.Errorf("Evaluate = %+v, %v; want passed", got, err)
	}
	svc.mu.Lock()
	last := svc.checks[len(svc.checks)-1]
	svc.mu.Unlock()
	if last.Check.ID != "demo.no-digits" || string(last.Config) != `{"strict":true}` {
		t.Errorf("check-invoke sent = %+v", last)
	}

	// Refresh picks up checks added after a deploy.
	svc.mu.Lock()
	svc.info.Checks = append(svc.info.Checks, "demo.new")
	svc.mu.Unlock()
	if _, ok := src.Check("demo.new"); ok {
		t.Errorf("demo.new found before Refresh")
	}
	if err := src.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, ok := src.Check("demo.new"); !ok {
		t.Errorf("demo.new not found after Refresh")
	}
}

func TestCheckSourceUnreachable(t *testing.T) {
	_, srv := newFakeService(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		w.WriteHeader(http.StatusUnauthorized)
	})
	if _, err := NewCheckSource(t.Context(), NewClient(srv.URL, "wrong", nil)); agents.CodeOf(err) != CodeUnauthorized {
		t.Errorf("err = %v, want unauthorized", err)
	}
}

func TestToolSourceConcurrentUse(t *testing.T) {
	_, url := newDemoService(t)
	src := NewToolSource(NewClient(url, testToken, nil), &ToolSourceOptions{InfoTTL: time.Millisecond})
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 16 {
		wg.Go(func() {
			tools := src.ForTenant("t" + string(rune('a'+i)))
			d, err := tools.Resolve(t.Context(), agent.ToolRef{ID: "demo.echo", Version: "^1.0.0"})
			if err != nil {
				errs <- err
				return
			}
			if _, err := tools.Invoke(t.Context(), d, json.RawMessage(`{"text":"x"}`), bindings.CallContext{RunID: "r", RequestID: "q"}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
