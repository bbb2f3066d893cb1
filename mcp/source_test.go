package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/mcp"
	"github.com/kindgi/agents/mcp/internal/mcptest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// inMemory is a Server.Transport to srv in this process: each Connect
// makes a fresh pair of the SDK's in-memory transports and connects srv to
// one end, so the source can connect again after a session ends.
func inMemory(srv *sdk.Server) sdk.Transport { return memTransport{srv} }

type memTransport struct{ srv *sdk.Server }

func (m memTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	client, server := sdk.NewInMemoryTransports()
	if _, err := m.srv.Connect(ctx, server, nil); err != nil {
		return nil, err
	}
	return client.Connect(ctx)
}

// newSource returns a source closed when the test ends.
func newSource(t *testing.T, opts mcp.Options) *mcp.ToolSource {
	t.Helper()
	src, err := mcp.NewToolSource(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	return src
}

// inProcess returns a source with the test server as tenant acme's
// prefix t.
func inProcess(t *testing.T, cfg mcptest.Config, opts mcp.Options) *mcp.ToolSource {
	t.Helper()
	src := newSource(t, opts)
	if err := src.AddServer("acme", mcp.Server{Prefix: "t", Transport: inMemory(mcptest.NewServer(cfg))}); err != nil {
		t.Fatal(err)
	}
	return src
}

func resolve(t *testing.T, tt bindings.TenantTools, id, rng string) bindings.ToolDescriptor {
	t.Helper()
	d, err := tt.Resolve(t.Context(), agent.ToolRef{ID: id, Version: rng})
	if err != nil {
		t.Fatalf("resolve %s@%s: %v", id, rng, err)
	}
	return d
}

func jsonEqual(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%v: %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("JSON (-want +got):\n%s", d)
	}
}

// TestDescriptors: a server's tools are descriptors <prefix>.<name> at the
// server's version, with their description, schemas and annotations.
func TestDescriptors(t *testing.T) {
	src := inProcess(t, mcptest.Config{Version: "1.2.0"}, mcp.Options{})
	tt := src.ForTenant("acme")

	d := resolve(t, tt, "t.echo", "^1.0.0")
	if d.ID != "t.echo" || d.Version != "1.2.0" || d.Description != "Echoes its text" {
		t.Errorf("descriptor %+v", d)
	}
	jsonEqual(t, d.InputSchema, `{"type":"object","properties":{"text":{"type":"string","description":"what to echo"}},"required":["text"],"additionalProperties":false}`)
	jsonEqual(t, d.OutputSchema, `{"type":"object","properties":{"text":{"type":"string"},"requestId":{"type":"string"},
		"headers":{"type":"object","additionalProperties":{"type":"string"}}},"required":["text","requestId"],"additionalProperties":false}`)
	if want := (&bindings.ToolAnnotations{Title: "Echo", ReadOnlyHint: true}); !cmp.Equal(d.Annotations, want) {
		t.Errorf("annotations %+v, want %+v", d.Annotations, want)
	}
	if d.Gate != nil {
		t.Errorf("gate %+v without Options.DestructiveGate", d.Gate)
	}
	yes := true
	if w := resolve(t, tt, "t.wipe", "1.2.0"); !cmp.Equal(w.Annotations, &bindings.ToolAnnotations{DestructiveHint: &yes}) || w.OutputSchema == nil {
		t.Errorf("wipe: %+v", w)
	}
	if s := resolve(t, tt, "t.shout", "*"); s.Annotations != nil || s.OutputSchema != nil {
		t.Errorf("shout: annotations %+v output schema %s, want none", s.Annotations, s.OutputSchema)
	}

	all, err := src.Tools(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range all {
		ids = append(ids, d.Ref())
	}
	want := []string{"t.block@1.2.0", "t.echo@1.2.0", "t.fail@1.2.0", "t.getenv@1.2.0", "t.grow@1.2.0", "t.note@1.2.0", "t.pid@1.2.0", "t.shout@1.2.0", "t.wipe@1.2.0"}
	if d := cmp.Diff(want, ids); d != "" {
		t.Errorf("tools (-want +got):\n%s", d)
	}

	for _, c := range []struct {
		id, rng, code string
	}{
		{"t.nope", "*", agents.CodeUnresolvedTool},
		{"other.echo", "*", agents.CodeUnresolvedTool},
		{"t.", "*", agents.CodeUnresolvedTool},
		{"t.echo", "^2.0.0", agents.CodeToolVersionUnresolvable},
		{"t.echo", "not a range", agents.CodeToolVersionUnresolvable},
	} {
		_, err := tt.Resolve(t.Context(), agent.ToolRef{ID: c.id, Version: c.rng})
		if agents.CodeOf(err) != c.code {
			t.Errorf("resolve %s@%s: %v, want %s", c.id, c.rng, err, c.code)
		}
	}
	var vErr *agents.ToolVersionUnresolvableError
	if _, err := tt.Resolve(t.Context(), agent.ToolRef{ID: "t.echo", Version: "^2.0.0"}); !errors.As(err, &vErr) || !cmp.Equal(vErr.Available, []string{"1.2.0"}) {
		t.Errorf("unresolvable version: %v", err)
	}
}

// TestVersion: a server whose serverInfo.version is not semver is
// versioned by Server.Version; with neither, resolving is invalid-bindings.
func TestVersion(t *testing.T) {
	for _, c := range []struct {
		reported, configured, want, code string
	}{
		{"2.0.1", "1.0.0", "2.0.1", ""},
		{"v3.1.0", "", "3.1.0", ""},
		{"devel", "1.4.0", "1.4.0", ""},
		{"", "1.4.0", "1.4.0", ""},
		{"devel", "", "", agents.CodeInvalidBindings},
	} {
		t.Run(c.reported+"/"+c.configured, func(t *testing.T) {
			src := newSource(t, mcp.Options{})
			err := src.AddServer("acme", mcp.Server{Prefix: "t", Version: c.configured, Transport: inMemory(mcptest.NewServer(mcptest.Config{Version: c.reported}))})
			if err != nil {
				t.Fatal(err)
			}
			d, err := src.ForTenant("acme").Resolve(t.Context(), agent.ToolRef{ID: "t.echo", Version: "*"})
			if agents.CodeOf(err) != c.code || d.Version != c.want {
				t.Errorf("resolved %q, %v; want %q, code %q", d.Version, err, c.want, c.code)
			}
		})
	}
}

// TestCall: structuredContent is the output, content blocks otherwise;
// the request id travels in _meta; isError is a *mcp.ToolError without a
// code; a protocol error is tool-invocation-failed.
func TestCall(t *testing.T) {
	src := inProcess(t, mcptest.Config{Version: "1.2.0"}, mcp.Options{})
	tt := src.ForTenant("acme")
	call := bindings.CallContext{TenantID: "acme", RunID: "run-1", RequestID: "run-1/agent-loop/0/dispatch-tools/call_1"}

	out, err := tt.Invoke(t.Context(), resolve(t, tt, "t.echo", "^1.0.0"), json.RawMessage(`{"text":"hi"}`), call)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, out, `{"text":"hi","requestId":"run-1/agent-loop/0/dispatch-tools/call_1"}`)

	out, err = tt.Invoke(t.Context(), resolve(t, tt, "t.shout", "*"), json.RawMessage(`{"a":1}`), call)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, out, `[{"type":"text","text":"{\"A\":1}"}]`)

	_, err = tt.Invoke(t.Context(), resolve(t, tt, "t.fail", "*"), json.RawMessage(`{"text":"x"}`), call)
	var toolErr *mcp.ToolError
	if !errors.As(err, &toolErr) || agents.CodeOf(err) != "" || toolErr.Message != "fail: nothing works" || toolErr.ToolID != "t.fail" {
		t.Fatalf("isError result: %v (code %q), want an uncoded *mcp.ToolError", err, agents.CodeOf(err))
	}
	jsonEqual(t, toolErr.Content, `[{"type":"text","text":"fail: nothing works"}]`)

	// A tool the server does not have (the descriptor is forged): the
	// server answers with a JSON-RPC error.
	_, err = tt.Invoke(t.Context(), bindings.ToolDescriptor{ID: "t.gone", Version: "1.2.0"}, json.RawMessage(`{}`), call)
	if agents.CodeOf(err) != agents.CodeToolInvocationFailed {
		t.Errorf("unknown tool: %v, want tool-invocation-failed", err)
	}
	// The session survives a protocol error.
	if _, err := tt.Invoke(t.Context(), resolve(t, tt, "t.echo", "*"), json.RawMessage(`{"text":"again"}`), call); err != nil {
		t.Errorf("call after a protocol error: %v", err)
	}
	// A descriptor of another version than the server's.
	_, err = tt.Invoke(t.Context(), bindings.ToolDescriptor{ID: "t.echo", Version: "1.1.0"}, json.RawMessage(`{"text":"x"}`), call)
	if agents.CodeOf(err) != agents.CodeToolVersionUnresolvable {
		t.Errorf("stale version: %v, want tool-version-unresolvable", err)
	}
	_, err = tt.Invoke(t.Context(), resolve(t, tt, "t.echo", "*"), json.RawMessage(`{"text":"x"}`), bindings.CallContext{TenantID: "globex"})
	if agents.CodeOf(err) != agents.CodeInvalidMessage {
		t.Errorf("call for another tenant: %v, want invalid-message", err)
	}
}

// TestTenants: a tenant sees only its own servers, and two tenants may
// use the same prefix for different servers.
func TestTenants(t *testing.T) {
	src := newSource(t, mcp.Options{})
	for tenant, v := range map[string]string{"acme": "1.0.0", "globex": "2.0.0"} {
		if err := src.AddServer(tenant, mcp.Server{Prefix: "t", Transport: inMemory(mcptest.NewServer(mcptest.Config{Version: v}))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.AddServer("initech", mcp.Server{Prefix: "only", Transport: inMemory(mcptest.NewServer(mcptest.Config{Version: "1.0.0"}))}); err != nil {
		t.Fatal(err)
	}
	if d := resolve(t, src.ForTenant("acme"), "t.echo", "*"); d.Version != "1.0.0" {
		t.Errorf("acme sees %s", d.Ref())
	}
	if d := resolve(t, src.ForTenant("globex"), "t.echo", "*"); d.Version != "2.0.0" {
		t.Errorf("globex sees %s", d.Ref())
	}
	for _, tenant := range []string{"acme", "nobody"} {
		_, err := src.ForTenant(tenant).Resolve(t.Context(), agent.ToolRef{ID: "only.echo", Version: "*"})
		if agents.CodeOf(err) != agents.CodeUnresolvedTool {
			t.Errorf("%s resolves initech's tool: %v", tenant, err)
		}
		_, err = src.ForTenant(tenant).Invoke(t.Context(), bindings.ToolDescriptor{ID: "only.echo", Version: "1.0.0"}, json.RawMessage(`{"text":"x"}`), bindings.CallContext{})
		if agents.CodeOf(err) != agents.CodeUnresolvedTool {
			t.Errorf("%s invokes initech's tool: %v", tenant, err)
		}
	}
}

// TestAddServerRefuses: malformed servers are invalid-message.
func TestAddServerRefuses(t *testing.T) {
	src := newSource(t, mcp.Options{})
	tr := inMemory(mcptest.NewServer(mcptest.Config{Version: "1.0.0"}))
	if err := src.AddServer("acme", mcp.Server{Prefix: "t", Transport: tr}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		tenant string
		s      mcp.Server
	}{
		"no tenant":      {"", mcp.Server{Prefix: "x", Transport: tr}},
		"no prefix":      {"acme", mcp.Server{Transport: tr}},
		"trailing dot":   {"acme", mcp.Server{Prefix: "x.", Transport: tr}},
		"duplicate":      {"acme", mcp.Server{Prefix: "t", Transport: tr}},
		"no transport":   {"acme", mcp.Server{Prefix: "x"}},
		"two transports": {"acme", mcp.Server{Prefix: "x", Command: "srv", URL: "http://127.0.0.1:1/mcp"}},
		"bad url":        {"acme", mcp.Server{Prefix: "x", URL: "ftp://host/mcp"}},
		"bad version":    {"acme", mcp.Server{Prefix: "x", Transport: tr, Version: "1.0"}},
		"headers stdio":  {"acme", mcp.Server{Prefix: "x", Command: "srv", Headers: map[string]string{"A": "b"}}},
		"env http":       {"acme", mcp.Server{Prefix: "x", URL: "http://127.0.0.1:1/mcp", Env: map[string]string{"A": "b"}}},
	} {
		if err := src.AddServer(c.tenant, c.s); agents.CodeOf(err) != agents.CodeInvalidMessage {
			t.Errorf("%s: %v, want invalid-message", name, err)
		}
	}
	if _, err := mcp.NewToolSource(mcp.Options{DestructiveGate: &agent.ToolGate{Mode: "sometimes"}}); agents.CodeOf(err) != agents.CodeInvalidBindings {
		t.Errorf("unknown gate mode: %v, want invalid-bindings", err)
	}
}

// TestListChanged: notifications/tools/list_changed refreshes the catalog.
func TestListChanged(t *testing.T) {
	src := inProcess(t, mcptest.Config{Version: "1.2.0"}, mcp.Options{})
	tt := src.ForTenant("acme")
	if _, err := tt.Resolve(t.Context(), agent.ToolRef{ID: "t.extra", Version: "*"}); agents.CodeOf(err) != agents.CodeUnresolvedTool {
		t.Fatalf("extra before grow: %v", err)
	}
	if _, err := tt.Invoke(t.Context(), resolve(t, tt, "t.grow", "*"), json.RawMessage(`{}`), bindings.CallContext{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		d, err := tt.Resolve(t.Context(), agent.ToolRef{ID: "t.extra", Version: "*"})
		if err == nil {
			out, err := tt.Invoke(t.Context(), d, json.RawMessage(`{}`), bindings.CallContext{})
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, out, `{"text":"extra","requestId":""}`)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("t.extra still not resolvable after list_changed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCancel: cancelling ctx abandons the call at once and the server is
// told (its handler's context is cancelled by notifications/cancelled).
func TestCancel(t *testing.T) {
	dir := t.TempDir()
	src := inProcess(t, mcptest.Config{Version: "1.2.0", Dir: dir}, mcp.Options{})
	tt := src.ForTenant("acme")
	d := resolve(t, tt, "t.block", "*")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := tt.Invoke(ctx, d, json.RawMessage(`{}`), bindings.CallContext{RequestID: "r"})
		done <- err
	}()
	waitFile(t, filepath.Join(dir, "started"))
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call: %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancelled call did not return")
	}
	waitFile(t, filepath.Join(dir, "cancelled"))
	// The session is still usable.
	if _, err := tt.Invoke(t.Context(), resolve(t, tt, "t.echo", "*"), json.RawMessage(`{"text":"x"}`), bindings.CallContext{}); err != nil {
		t.Errorf("call after a cancelled one: %v", err)
	}
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestDestructiveGate: with Options.DestructiveGate, tools the server
// marks destructive (by MCP's defaults, also a tool without annotations)
// carry it as their default gate; read-only and non-destructive ones don't.
func TestDestructiveGate(t *testing.T) {
	gate := &agent.ToolGate{Mode: agent.GateAlwaysAsk, RequiredRole: "senior"}
	src := inProcess(t, mcptest.Config{Version: "1.2.0"}, mcp.Options{DestructiveGate: gate})
	gate.Mode = agent.GateNeverAsk // the source keeps its own copy
	tt := src.ForTenant("acme")
	for id, want := range map[string]*agent.ToolGate{
		"t.wipe":  {Mode: agent.GateAlwaysAsk, RequiredRole: "senior"},
		"t.shout": {Mode: agent.GateAlwaysAsk, RequiredRole: "senior"},
		"t.echo":  nil,
		"t.note":  nil,
	} {
		if d := resolve(t, tt, id, "*"); !cmp.Equal(d.Gate, want) {
			t.Errorf("%s gate %+v, want %+v", id, d.Gate, want)
		}
	}
}

// TestClosed: a closed source refuses calls and new servers.
func TestClosed(t *testing.T) {
	src := inProcess(t, mcptest.Config{Version: "1.2.0"}, mcp.Options{})
	tt := src.ForTenant("acme")
	d := resolve(t, tt, "t.echo", "*")
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tt.Invoke(t.Context(), d, json.RawMessage(`{"text":"x"}`), bindings.CallContext{}); agents.CodeOf(err) != agents.CodeToolInvocationFailed || !strings.Contains(err.Error(), "closed") {
		t.Errorf("call after Close: %v", err)
	}
	if err := src.AddServer("acme", mcp.Server{Prefix: "u", Command: "x"}); agents.CodeOf(err) != agents.CodeInvalidBindings {
		t.Errorf("AddServer after Close: %v", err)
	}
	if err := src.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestConcurrentCalls: calls from many goroutines share one session, each
// getting its own answer; the first ones connect once.
func TestConcurrentCalls(t *testing.T) {
	src := inProcess(t, mcptest.Config{Version: "1.2.0"}, mcp.Options{})
	tt := src.ForTenant("acme")
	const n = 16
	errs := make(chan error, n)
	for i := range n {
		go func() {
			id := "req-" + strconv.Itoa(i)
			d, err := tt.Resolve(t.Context(), agent.ToolRef{ID: "t.echo", Version: "^1.0.0"})
			if err != nil {
				errs <- err
				return
			}
			out, err := tt.Invoke(t.Context(), d, json.RawMessage(`{"text":"`+id+`"}`), bindings.CallContext{RequestID: id})
			if err == nil && string(out) != `{"requestId":"`+id+`","text":"`+id+`"}` {
				err = errors.New("call " + id + " got " + string(out))
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
