package mcp_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/mcp"
	"github.com/kindgi/agents/mcp/internal/mcptest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkCall is one MCP tool call through ToolSource.Invoke (the echo
// tool: a JSON object in, structured content out), by transport: the
// SDK's in-memory pipe, a subprocess over stdio, streamable HTTP on
// loopback. The connection is made before the timer starts.
func BenchmarkCall(b *testing.B) {
	srv := mcptest.NewServer(mcptest.Config{Version: "1.2.0"})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	defer hs.Close()
	for _, c := range []struct {
		name   string
		server mcp.Server
	}{
		{"in-memory", mcp.Server{Prefix: "t", Transport: inMemory(srv)}},
		{"stdio", mcp.Server{Prefix: "t", Command: serverProgram(b), Env: map[string]string{"MCPTEST_VERSION": "1.2.0"}}},
		{"streamable-http", mcp.Server{Prefix: "t", URL: hs.URL}},
	} {
		b.Run(c.name, func(b *testing.B) {
			src, err := mcp.NewToolSource(mcp.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer src.Close()
			if err := src.AddServer("acme", c.server); err != nil {
				b.Fatal(err)
			}
			tt := src.ForTenant("acme")
			d := bindings.ToolDescriptor{ID: "t.echo", Version: "1.2.0"}
			input := json.RawMessage(`{"text":"indemnity cap"}`)
			call := bindings.CallContext{TenantID: "acme", RequestID: "run-1/agent-loop/0/dispatch-tools/call_1"}
			if _, err := tt.Invoke(b.Context(), d, input, call); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := tt.Invoke(b.Context(), d, input, call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
