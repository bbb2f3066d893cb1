package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/mcp"
	"github.com/kindgi/agents/mcp/internal/mcptest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func agentRef(id string) agent.ToolRef { return agent.ToolRef{ID: id, Version: "*"} }

// secrets is a SecretResolver over a map keyed "tenant/name".
type secrets map[string]string

func (s secrets) ResolveSecret(_ context.Context, tenantID, name string) (string, error) {
	v, ok := s[tenantID+"/"+name]
	if !ok {
		return "", &agents.InvalidMessageError{Reason: "no secret " + name}
	}
	return v, nil
}

// httpServer serves the test server over streamable HTTP on loopback,
// refusing requests without an Authorization header and recording the
// ones it saw. It stops when the test ends (after the sources made after
// it close).
func httpServer(t *testing.T, cfg mcptest.Config) (*httptest.Server, func() []string) {
	t.Helper()
	srv := mcptest.NewServer(cfg)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	var mu sync.Mutex
	var seen []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := r.Header.Get("Authorization")
		if a == "" {
			http.Error(w, "no credentials", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		if !slices.Contains(seen, a) {
			seen = append(seen, a)
		}
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// TestStreamableHTTP: a server over streamable HTTP gets its static
// headers on every request, its secret headers resolved through
// Options.Secrets for the source's own requests and, on a call, the value
// the turn resolved (the descriptor names the secret).
func TestStreamableHTTP(t *testing.T) {
	hs, seen := httpServer(t, mcptest.Config{Version: "2.1.0"})
	src := newSource(t, mcp.Options{Secrets: secrets{"acme/mcp-token": "Bearer source-token"}})
	if err := src.AddServer("acme", mcp.Server{Prefix: "h", URL: hs.URL,
		Headers: map[string]string{"X-Tenant": "acme"}, SecretHeaders: map[string]string{"Authorization": "mcp-token"}}); err != nil {
		t.Fatal(err)
	}
	tt := src.ForTenant("acme")
	d := resolve(t, tt, "h.echo", "^2.0.0")
	if !cmp.Equal(d.Secrets, []string{"mcp-token"}) {
		t.Errorf("descriptor secrets %v, want [mcp-token]", d.Secrets)
	}
	out, err := tt.Invoke(t.Context(), d, json.RawMessage(`{"text":"over http"}`), bindings.CallContext{
		TenantID: "acme", RequestID: "req-1", Secrets: map[string]string{"mcp-token": "Bearer call-token"},
	})
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, out, `{"text":"over http","requestId":"req-1","headers":{"Authorization":"Bearer call-token","X-Tenant":"acme"}}`)
	got := seen()
	if !slices.Contains(got, "Bearer source-token") || !slices.Contains(got, "Bearer call-token") {
		t.Errorf("credentials seen %v, want the source's (listing) and the call's", got)
	}

	_, err = tt.Invoke(t.Context(), resolve(t, tt, "h.fail", "*"), json.RawMessage(`{"text":"x"}`), bindings.CallContext{RequestID: "req-2"})
	var toolErr *mcp.ToolError
	if !asToolError(err, &toolErr) || toolErr.Message != "fail: nothing works" {
		t.Errorf("isError over http: %v", err)
	}
}

func asToolError(err error, target **mcp.ToolError) bool {
	te, ok := err.(*mcp.ToolError)
	if ok {
		*target = te
	}
	return ok && agents.CodeOf(err) == ""
}

// TestStreamableHTTPDown: a server that went away fails the call with
// tool-invocation-failed; one without credentials cannot be listed.
func TestStreamableHTTPDown(t *testing.T) {
	hs, _ := httpServer(t, mcptest.Config{Version: "2.1.0"})
	src := newSource(t, mcp.Options{Secrets: secrets{"acme/mcp-token": "Bearer t"}})
	if err := src.AddServer("acme", mcp.Server{Prefix: "h", URL: hs.URL, SecretHeaders: map[string]string{"Authorization": "mcp-token"}}); err != nil {
		t.Fatal(err)
	}
	if err := src.AddServer("globex", mcp.Server{Prefix: "h", URL: hs.URL}); err != nil {
		t.Fatal(err)
	}
	if _, err := src.ForTenant("globex").Resolve(t.Context(), agentRef("h.echo")); agents.CodeOf(err) != agents.CodeToolInvocationFailed {
		t.Errorf("resolve without credentials: %v, want tool-invocation-failed", err)
	}
	tt := src.ForTenant("acme")
	d := resolve(t, tt, "h.echo", "*")
	hs.CloseClientConnections()
	hs.Close()
	_, err := tt.Invoke(t.Context(), d, json.RawMessage(`{"text":"x"}`), bindings.CallContext{Secrets: map[string]string{"mcp-token": "Bearer t"}})
	if agents.CodeOf(err) != agents.CodeToolInvocationFailed {
		t.Errorf("call to a stopped server: %v, want tool-invocation-failed", err)
	}
}
