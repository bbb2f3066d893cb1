package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/logbuf"
	"github.com/kindgi/agents/mcp"
	"github.com/kindgi/agents/registry"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolServer returns an MCP server at version 1.0.0 listing the named
// tools; each answers {"tool": "<its name>"}.
func toolServer(names ...string) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "kindgi-test", Version: "1.0.0"}, nil)
	for _, n := range names {
		addTool(s, n)
	}
	return s
}

// addTool adds tool name to s (a connected client is sent
// tools/list_changed).
func addTool(s *sdk.Server, name string) {
	sdk.AddTool(s, &sdk.Tool{Name: name, Description: "tool " + name},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, map[string]string, error) {
			return nil, map[string]string{"tool": name}, nil
		})
}

// registryTool adds tool id at version 1.0.0 to reg for tenant acme; it
// answers {"registry": "<id>"}.
func registryTool(t *testing.T, reg *registry.Tools, id string) {
	t.Helper()
	out, _ := json.Marshal(map[string]string{"registry": id})
	err := reg.Add("acme", bindings.ToolDescriptor{ID: id, Version: "1.0.0", Description: "registry " + id},
		func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) { return out, nil })
	if err != nil {
		t.Fatal(err)
	}
}

func toolIDs(t *testing.T, src *mcp.ToolSource, tenant string) []string {
	t.Helper()
	ds, err := src.Tools(t.Context(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range ds {
		ids = append(ids, d.ID)
	}
	return ids
}

// wantConflict fails unless err is a *mcp.ConflictError equal to want.
func wantConflict(t *testing.T, what string, err error, want mcp.ConflictError) {
	t.Helper()
	var ce *mcp.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("%s: %v, want *mcp.ConflictError", what, err)
	}
	if d := cmp.Diff(want, *ce); d != "" {
		t.Errorf("%s: conflict (-want +got):\n%s", what, d)
	}
	if agents.CodeOf(err) != agents.CodeInvalidBindings {
		t.Errorf("%s: code %q, want invalid-bindings", what, agents.CodeOf(err))
	}
	for _, s := range []string{want.ToolID, want.Server, want.Other, want.TenantID} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: %q does not name %q", what, err, s)
		}
	}
}

func invoke(t *testing.T, tt bindings.TenantTools, id string) json.RawMessage {
	t.Helper()
	out, err := tt.Invoke(t.Context(), resolve(t, tt, id, "^1.0.0"), json.RawMessage(`{}`), bindings.CallContext{})
	if err != nil {
		t.Fatalf("invoke %s: %v", id, err)
	}
	return out
}

// TestAddServerRefusesNestedPrefix: servers files.admin (tool delete) and
// files (tool admin.delete) would both serve files.admin.delete, in
// either order of registration; AddServer refuses the second naming both,
// and Tools lists the id once. Prefixes that do not nest, and nesting
// prefixes of different tenants, are accepted.
func TestAddServerRefusesNestedPrefix(t *testing.T) {
	for _, order := range [][2]string{{"files.admin", "files"}, {"files", "files.admin"}} {
		t.Run(order[0]+" first", func(t *testing.T) {
			src := newSource(t, mcp.Options{})
			tools := map[string]string{"files.admin": "delete", "files": "admin.delete"}
			if err := src.AddServer("acme", mcp.Server{Prefix: order[0], Transport: inMemory(toolServer(tools[order[0]]))}); err != nil {
				t.Fatal(err)
			}
			err := src.AddServer("acme", mcp.Server{Prefix: order[1], Transport: inMemory(toolServer(tools[order[1]]))})
			wantConflict(t, "AddServer "+order[1], err, mcp.ConflictError{TenantID: "acme", ToolID: "files.admin.*", Server: order[1], Other: order[0]})
			if d := cmp.Diff([]string{"files.admin.delete"}, toolIDs(t, src, "acme")); d != "" {
				t.Errorf("Tools (-want +got):\n%s", d)
			}
			jsonEqual(t, invoke(t, src.ForTenant("acme"), "files.admin.delete"), `{"tool":"`+tools[order[0]]+`"}`)

			if err := src.AddServer("globex", mcp.Server{Prefix: order[1], Transport: inMemory(toolServer("x"))}); err != nil {
				t.Errorf("another tenant's server: %v", err)
			}
			if err := src.AddServer("acme", mcp.Server{Prefix: "filesx", Transport: inMemory(toolServer("x"))}); err != nil {
				t.Errorf("prefix filesx: %v", err)
			}
		})
	}
}

// TestRegistryConflict: with Options.Registry, the tenant view serves the
// registry's tools and the servers'; a listed tool whose id the registry
// has is refused (left out of Tools, a conflict on Resolve and Invoke,
// logged) while the server's other tools work; a tool the registry gains
// after the server was listed is refused too.
func TestRegistryConflict(t *testing.T) {
	reg := registry.NewTools()
	registryTool(t, reg, "files.stat")
	registryTool(t, reg, "notes.add")
	var log logbuf.Buffer
	src := newSource(t, mcp.Options{Registry: reg, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err := src.AddServer("acme", mcp.Server{Prefix: "files", Transport: inMemory(toolServer("read", "stat", "write"))}); err != nil {
		t.Fatal(err)
	}
	tt := src.ForTenant("acme")

	if d := cmp.Diff([]string{"files.read", "files.write"}, toolIDs(t, src, "acme")); d != "" {
		t.Errorf("Tools (-want +got):\n%s", d)
	}
	want := mcp.ConflictError{TenantID: "acme", ToolID: "files.stat", Server: "files"}
	_, err := tt.Resolve(t.Context(), agent.ToolRef{ID: "files.stat", Version: "*"})
	wantConflict(t, "Resolve files.stat", err, want)
	_, err = tt.Invoke(t.Context(), bindings.ToolDescriptor{ID: "files.stat", Version: "1.0.0"}, json.RawMessage(`{}`), bindings.CallContext{})
	wantConflict(t, "Invoke files.stat", err, want)
	if l := log.String(); !strings.Contains(l, "mcp: tool refused") || !strings.Contains(l, "id=files.stat") {
		t.Errorf("log does not report the refused tool:\n%s", l)
	}

	jsonEqual(t, invoke(t, tt, "files.read"), `{"tool":"read"}`)
	jsonEqual(t, invoke(t, tt, "notes.add"), `{"registry":"notes.add"}`)
	if _, err := tt.Resolve(t.Context(), agent.ToolRef{ID: "files.none", Version: "*"}); agents.CodeOf(err) != agents.CodeUnresolvedTool {
		t.Errorf("files.none: %v, want unresolved-tool", err)
	}

	// The registry gains files.write after the server's list was read.
	d := resolve(t, tt, "files.write", "*")
	registryTool(t, reg, "files.write")
	_, err = tt.Invoke(t.Context(), d, json.RawMessage(`{}`), bindings.CallContext{})
	wantConflict(t, "Invoke files.write after the registry gained it", err, mcp.ConflictError{TenantID: "acme", ToolID: "files.write", Server: "files"})
	_, err = tt.Resolve(t.Context(), agent.ToolRef{ID: "files.write", Version: "*"})
	wantConflict(t, "Resolve files.write after the registry gained it", err, mcp.ConflictError{TenantID: "acme", ToolID: "files.write", Server: "files"})
	if d := cmp.Diff([]string{"files.read"}, toolIDs(t, src, "acme")); d != "" {
		t.Errorf("Tools after the registry gained files.write (-want +got):\n%s", d)
	}
	jsonEqual(t, invoke(t, tt, "files.read"), `{"tool":"read"}`)
}

// TestListChangedConflict: a tool a server adds later (tools/list_changed)
// whose id the tenant already has is refused and reported; until then the
// id is the registry's, and the server's other tools keep working.
func TestListChangedConflict(t *testing.T) {
	reg := registry.NewTools()
	registryTool(t, reg, "files.stat")
	var log logbuf.Buffer
	src := newSource(t, mcp.Options{Registry: reg, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	srv := toolServer("read")
	if err := src.AddServer("acme", mcp.Server{Prefix: "files", Transport: inMemory(srv)}); err != nil {
		t.Fatal(err)
	}
	tt := src.ForTenant("acme")
	if d := resolve(t, tt, "files.stat", "*"); d.Description != "registry files.stat" {
		t.Fatalf("files.stat before the change is %q, want the registry's", d.Description)
	}

	addTool(srv, "stat")
	addTool(srv, "list")
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := tt.Resolve(t.Context(), agent.ToolRef{ID: "files.list", Version: "*"})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("files.list still not resolvable after list_changed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, err := tt.Resolve(t.Context(), agent.ToolRef{ID: "files.stat", Version: "*"})
	wantConflict(t, "Resolve files.stat after the change", err, mcp.ConflictError{TenantID: "acme", ToolID: "files.stat", Server: "files"})
	if d := cmp.Diff([]string{"files.list", "files.read"}, toolIDs(t, src, "acme")); d != "" {
		t.Errorf("Tools (-want +got):\n%s", d)
	}
	if l := log.String(); !strings.Contains(l, "id=files.stat") {
		t.Errorf("log does not report the refused tool:\n%s", l)
	}
	jsonEqual(t, invoke(t, tt, "files.read"), `{"tool":"read"}`)
	jsonEqual(t, invoke(t, tt, "files.list"), `{"tool":"list"}`)
}

// twiceTransport connects to srv in memory and lists the tool named twice
// in every tools/list result twice, as a faulty server could.
type twiceTransport struct {
	srv   *sdk.Server
	twice string
}

func (tr twiceTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := memTransport{tr.srv}.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return twiceConn{Connection: c, twice: tr.twice}, nil
}

type twiceConn struct {
	sdk.Connection
	twice string
}

func (c twiceConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	resp, ok := msg.(*jsonrpc.Response)
	if err != nil || !ok || resp.Result == nil {
		return msg, err
	}
	var res map[string]json.RawMessage
	if json.Unmarshal(resp.Result, &res) != nil || res["tools"] == nil {
		return msg, nil
	}
	var tools []map[string]any
	if err := json.Unmarshal(res["tools"], &tools); err != nil {
		return nil, err
	}
	for _, tool := range tools {
		if tool["name"] == c.twice {
			tools = append(tools, tool)
			break
		}
	}
	if res["tools"], err = json.Marshal(tools); err != nil {
		return nil, err
	}
	if resp.Result, err = json.Marshal(res); err != nil {
		return nil, err
	}
	return resp, nil
}

// TestToolListedTwiceIsRefused: a server that lists one tool name twice
// does not get to pick which of the two an id means: the name is refused
// and reported, the server's other tools keep working.
func TestToolListedTwiceIsRefused(t *testing.T) {
	var log logbuf.Buffer
	src := newSource(t, mcp.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err := src.AddServer("acme", mcp.Server{Prefix: "files", Transport: twiceTransport{srv: toolServer("read", "stat"), twice: "stat"}}); err != nil {
		t.Fatal(err)
	}
	tt := src.ForTenant("acme")
	if d := cmp.Diff([]string{"files.read"}, toolIDs(t, src, "acme")); d != "" {
		t.Errorf("Tools (-want +got):\n%s", d)
	}
	_, err := tt.Resolve(t.Context(), agent.ToolRef{ID: "files.stat", Version: "*"})
	wantConflict(t, "Resolve files.stat", err, mcp.ConflictError{TenantID: "acme", ToolID: "files.stat", Server: "files", Other: "files"})
	_, err = tt.Invoke(t.Context(), bindings.ToolDescriptor{ID: "files.stat", Version: "1.0.0"}, json.RawMessage(`{}`), bindings.CallContext{})
	wantConflict(t, "Invoke files.stat", err, mcp.ConflictError{TenantID: "acme", ToolID: "files.stat", Server: "files", Other: "files"})
	if l := log.String(); !strings.Contains(l, "id=files.stat") {
		t.Errorf("log does not report the refused tool:\n%s", l)
	}
	jsonEqual(t, invoke(t, tt, "files.read"), `{"tool":"read"}`)
}
