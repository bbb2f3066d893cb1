package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
)

func desc(id, version string) bindings.ToolDescriptor {
	return bindings.ToolDescriptor{
		ID:          id,
		Version:     version,
		Description: id + " " + version,
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}
}

// echo returns a handler that answers with its tool version and input.
func echo(version string) bindings.ToolHandler {
	return func(_ context.Context, input json.RawMessage, call bindings.CallContext) (json.RawMessage, error) {
		return json.Marshal(map[string]any{"version": version, "input": input, "requestId": call.RequestID})
	}
}

func mustAdd(t *testing.T, tools *Tools, tenant string, versions ...string) {
	t.Helper()
	for _, v := range versions {
		if err := tools.Add(tenant, desc("acme.clause-search", v), echo(v)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestToolsResolve(t *testing.T) {
	tools := NewTools()
	mustAdd(t, tools, "t1", "1.9.0", "1.10.0", "1.2.0", "2.0.0-rc.1", "2.1.0", "1.10.1-beta.1")
	tt := tools.ForTenant("t1")
	tests := []struct{ rng, want string }{
		{"^1.0.0", "1.10.0"},
		{"~1.9.0", "1.9.0"},
		{"1.2.0", "1.2.0"},
		{">=1.0.0 <2.0.0", "1.10.0"},
		{"*", "2.1.0"},
		{"2.0.0-rc.1", "2.0.0-rc.1"},
		{"^1.10.1-beta.0", "1.10.1-beta.1"},
		{"^2.0.0-rc.0", "2.1.0"},
	}
	for _, tc := range tests {
		d, err := tt.Resolve(t.Context(), agent.ToolRef{ID: "acme.clause-search", Version: tc.rng})
		if err != nil {
			t.Errorf("Resolve(%q): %v", tc.rng, err)
			continue
		}
		if diff := cmp.Diff(desc("acme.clause-search", tc.want), d); diff != "" {
			t.Errorf("Resolve(%q) (-want +got):\n%s", tc.rng, diff)
		}
	}
}

func TestToolsResolveErrors(t *testing.T) {
	tools := NewTools()
	mustAdd(t, tools, "t1", "1.9.0", "1.10.0", "0.3.0")
	tt := tools.ForTenant("t1")

	_, err := tt.Resolve(t.Context(), agent.ToolRef{ID: "acme.send-email", Version: "^1.0.0"})
	if diff := cmp.Diff(error(&agents.UnresolvedToolError{ToolID: "acme.send-email"}), err, errCmp); diff != "" {
		t.Errorf("unknown id (-want +got):\n%s", diff)
	}

	_, err = tt.Resolve(t.Context(), agent.ToolRef{ID: "acme.clause-search", Version: "^2.0.0"})
	want := &agents.ToolVersionUnresolvableError{ToolID: "acme.clause-search", Range: "^2.0.0", Available: []string{"1.10.0", "1.9.0", "0.3.0"}}
	if diff := cmp.Diff(error(want), err, errCmp); diff != "" {
		t.Errorf("no match (-want +got):\n%s", diff)
	}

	_, err = tt.Resolve(t.Context(), agent.ToolRef{ID: "acme.clause-search", Version: ">=1.0.0, <2.0.0"})
	var e *agents.ToolVersionUnresolvableError
	if !errors.As(err, &e) || e.Reason == "" || len(e.Available) != 3 {
		t.Errorf("invalid range: error = %#v, want tool-version-unresolvable with a Reason", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := tt.Resolve(ctx, agent.ToolRef{ID: "acme.clause-search", Version: "^1.0.0"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: %v", err)
	}
}

// errCmp compares coded errors by their exported fields.
var errCmp = cmp.Comparer(func(a, b error) bool {
	return agents.CodeOf(a) == agents.CodeOf(b) && cmp.Equal(a, b)
})

func TestToolsTenantIsolation(t *testing.T) {
	tools := NewTools()
	mustAdd(t, tools, "tenant-a", "1.0.0")
	if err := tools.Add("tenant-b", desc("acme.other", "1.0.0"), echo("b")); err != nil {
		t.Fatal(err)
	}
	a, b := tools.ForTenant("tenant-a"), tools.ForTenant("tenant-b")
	ref := agent.ToolRef{ID: "acme.clause-search", Version: "^1.0.0"}

	d, err := a.Resolve(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Resolve(t.Context(), ref); agents.CodeOf(err) != agents.CodeUnresolvedTool {
		t.Errorf("tenant-b resolved tenant-a's tool: %v", err)
	}
	if _, err := b.Invoke(t.Context(), d, json.RawMessage(`{}`), bindings.CallContext{TenantID: "tenant-b"}); agents.CodeOf(err) != agents.CodeUnresolvedTool {
		t.Errorf("tenant-b invoked tenant-a's tool: %v", err)
	}
	if _, err := tools.ForTenant("").Resolve(t.Context(), ref); agents.CodeOf(err) != agents.CodeUnresolvedTool {
		t.Errorf("empty tenant resolved a tool: %v", err)
	}

	// The same id in another tenant is a separate catalog entry.
	if err := tools.Add("tenant-b", desc("acme.clause-search", "2.0.0"), echo("b2")); err != nil {
		t.Fatal(err)
	}
	_, err = a.Resolve(t.Context(), agent.ToolRef{ID: "acme.clause-search", Version: "^2.0.0"})
	var e *agents.ToolVersionUnresolvableError
	if !errors.As(err, &e) || !cmp.Equal(e.Available, []string{"1.0.0"}) {
		t.Errorf("tenant-a sees tenant-b's versions: %v", err)
	}
	if got, err := b.Resolve(t.Context(), agent.ToolRef{ID: "acme.clause-search", Version: "*"}); err != nil || got.Version != "2.0.0" {
		t.Errorf("tenant-b: %v, %v", got.Ref(), err)
	}
}

func TestToolsInvoke(t *testing.T) {
	tools := NewTools()
	mustAdd(t, tools, "t1", "1.0.0", "1.1.0")
	boom := errors.New("boom")
	if err := tools.Add("t1", desc("acme.fail", "1.0.0"), func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
		return nil, boom
	}); err != nil {
		t.Fatal(err)
	}
	tt := tools.ForTenant("t1")
	d, err := tt.Resolve(t.Context(), agent.ToolRef{ID: "acme.clause-search", Version: "~1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := tt.Invoke(t.Context(), d, json.RawMessage(`{"q":"x"}`), bindings.CallContext{TenantID: "t1", RequestID: "req-1"})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"version": "1.0.0", "input": map[string]any{"q": "x"}, "requestId": "req-1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}

	if _, err := tt.Invoke(t.Context(), desc("acme.fail", "1.0.0"), nil, bindings.CallContext{}); !errors.Is(err, boom) {
		t.Errorf("handler error = %v, want it returned as is", err)
	}
	if _, err := tt.Invoke(t.Context(), desc("acme.clause-search", "1.2.0"), nil, bindings.CallContext{}); agents.CodeOf(err) != agents.CodeToolVersionUnresolvable {
		t.Errorf("unknown version: %v", err)
	}
	if _, err := tt.Invoke(t.Context(), d, nil, bindings.CallContext{TenantID: "t2"}); agents.CodeOf(err) != agents.CodeInvalidMessage {
		t.Errorf("call for another tenant: %v", err)
	}

	called := false
	if err := tools.Add("t1", desc("acme.spy", "1.0.0"), func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
		called = true
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := tt.Invoke(ctx, desc("acme.spy", "1.0.0"), nil, bindings.CallContext{}); !errors.Is(err, context.Canceled) || called {
		t.Errorf("cancelled ctx: err %v, handler called %v", err, called)
	}
}

func TestToolsAddRefuses(t *testing.T) {
	tools := NewTools()
	mustAdd(t, tools, "t1", "1.0.0")
	bad := func(mut func(*bindings.ToolDescriptor)) bindings.ToolDescriptor {
		d := desc("acme.x", "1.0.0")
		mut(&d)
		return d
	}
	tests := []struct {
		name   string
		tenant string
		d      bindings.ToolDescriptor
		h      bindings.ToolHandler
	}{
		{"empty tenant", "", desc("acme.x", "1.0.0"), echo("")},
		{"empty id", "t1", desc("", "1.0.0"), echo("")},
		{"range version", "t1", desc("acme.x", "^1.0.0"), echo("")},
		{"v prefix", "t1", desc("acme.x", "v1.0.0"), echo("")},
		{"empty version", "t1", desc("acme.x", ""), echo("")},
		{"nil handler", "t1", desc("acme.x", "1.0.0"), nil},
		{"bad input schema", "t1", bad(func(d *bindings.ToolDescriptor) { d.InputSchema = json.RawMessage(`{"type":`) }), echo("")},
		{"bad output schema", "t1", bad(func(d *bindings.ToolDescriptor) { d.OutputSchema = json.RawMessage(`nope`) }), echo("")},
		{"duplicate", "t1", desc("acme.clause-search", "1.0.0"), echo("")},
	}
	for _, tc := range tests {
		err := tools.Add(tc.tenant, tc.d, tc.h)
		var e *agents.InvalidMessageError
		if !errors.As(err, &e) || e.Reason == "" {
			t.Errorf("%s: error = %v, want invalid-message", tc.name, err)
		}
	}
	if _, err := tools.ForTenant("t1").Resolve(t.Context(), agent.ToolRef{ID: "acme.x", Version: "*"}); agents.CodeOf(err) != agents.CodeUnresolvedTool {
		t.Errorf("a refused tool was added: %v", err)
	}
}

func TestToolsDescriptorsAreCopies(t *testing.T) {
	tools := NewTools()
	d := desc("acme.x", "1.0.0")
	d.Secrets = []string{"API_KEY"}
	d.Env = map[string]string{"REGION": "eu"}
	d.Config = map[string]any{"limits": map[string]any{"max": 3.0}, "tags": []any{"a"}}
	if err := tools.Add("t1", d, echo("1.0.0")); err != nil {
		t.Fatal(err)
	}
	want := desc("acme.x", "1.0.0")
	want.Secrets = []string{"API_KEY"}
	want.Env = map[string]string{"REGION": "eu"}
	want.Config = map[string]any{"limits": map[string]any{"max": 3.0}, "tags": []any{"a"}}

	mutate := func(d *bindings.ToolDescriptor) {
		d.InputSchema[0] = 'X'
		d.Secrets[0] = "OTHER"
		d.Env["REGION"] = "us"
		d.Config["limits"].(map[string]any)["max"] = 99.0
		d.Config["tags"].([]any)[0] = "z"
	}
	mutate(&d)
	tt := tools.ForTenant("t1")
	got, err := tt.Resolve(t.Context(), agent.ToolRef{ID: "acme.x", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("changing the added descriptor reached the catalog (-want +got):\n%s", diff)
	}
	mutate(&got)
	again, _ := tt.Resolve(t.Context(), agent.ToolRef{ID: "acme.x", Version: "1.0.0"})
	if diff := cmp.Diff(want, again); diff != "" {
		t.Fatalf("changing a resolved descriptor reached the catalog (-want +got):\n%s", diff)
	}
}

func TestToolsViewIsLive(t *testing.T) {
	tools := NewTools()
	tt := tools.ForTenant("t1")
	ref := agent.ToolRef{ID: "acme.clause-search", Version: "^1.0.0"}
	if _, err := tt.Resolve(t.Context(), ref); agents.CodeOf(err) != agents.CodeUnresolvedTool {
		t.Fatalf("empty catalog: %v", err)
	}
	mustAdd(t, tools, "t1", "1.0.0")
	if _, err := tt.Resolve(t.Context(), ref); err != nil {
		t.Fatalf("view made before Add: %v", err)
	}
}

func TestToolsConcurrent(t *testing.T) {
	tools := NewTools()
	var wg sync.WaitGroup
	for w := range 4 {
		tenant := fmt.Sprintf("t%d", w%2)
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 100 {
				d := desc("acme.c", fmt.Sprintf("1.%d.%d", w, i))
				if err := tools.Add(tenant, d, echo(d.Version)); err != nil {
					t.Error(err)
				}
			}
		}()
		go func() {
			defer wg.Done()
			tt := tools.ForTenant(tenant)
			for range 100 {
				d, err := tt.Resolve(t.Context(), agent.ToolRef{ID: "acme.c", Version: "^1.0.0"})
				if err != nil {
					if agents.CodeOf(err) != agents.CodeUnresolvedTool {
						t.Error(err)
					}
					continue
				}
				if _, err := tt.Invoke(t.Context(), d, json.RawMessage(`{}`), bindings.CallContext{TenantID: tenant}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	for tenant, want := range map[string]string{"t0": "1.2.99", "t1": "1.3.99"} {
		d, err := tools.ForTenant(tenant).Resolve(t.Context(), agent.ToolRef{ID: "acme.c", Version: "^1.0.0"})
		if err != nil || d.Version != want {
			t.Errorf("%s: %s, %v; want %s", tenant, d.Version, err, want)
		}
	}
}
