package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func ExampleToolSource() {
	ctx := context.Background()

	// An MCP server built with the SDK, here in the same process.
	server := sdk.NewServer(&sdk.Implementation{Name: "clauses", Version: "1.4.0"}, nil)
	type searchIn struct {
		Query string `json:"query" jsonschema:"what the clause is about"`
	}
	type searchOut struct {
		IDs []string `json:"ids"`
	}
	sdk.AddTool(server, &sdk.Tool{Name: "search", Description: "Search clauses", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *sdk.CallToolRequest, in searchIn) (*sdk.CallToolResult, searchOut, error) {
			return nil, searchOut{IDs: []string{"C-7"}}, nil
		})

	src, err := mcp.NewToolSource(mcp.Options{DestructiveGate: &agent.ToolGate{Mode: agent.GateAlwaysAsk}})
	if err != nil {
		panic(err)
	}
	defer src.Close()
	// A stdio server would be mcp.Server{Prefix: "clauses", Command: "clause-server"},
	// a remote one mcp.Server{Prefix: "clauses", URL: "https://…/mcp"}.
	client, serverEnd := sdk.NewInMemoryTransports()
	if _, err := server.Connect(ctx, serverEnd, nil); err != nil {
		panic(err)
	}
	if err := src.AddServer("acme", mcp.Server{Prefix: "clauses", Transport: client}); err != nil {
		panic(err)
	}

	// The turn resolves the agent's ToolRef and calls the tool like any other.
	tools := src.ForTenant("acme")
	d, err := tools.Resolve(ctx, agent.ToolRef{ID: "clauses.search", Version: "^1.0.0"})
	if err != nil {
		panic(err)
	}
	fmt.Println(d.Ref(), d.Description, "read-only:", d.Annotations.ReadOnlyHint, "gate:", d.Gate)
	out, err := tools.Invoke(ctx, d, json.RawMessage(`{"query":"confidentiality"}`), bindings.CallContext{TenantID: "acme", RequestID: "run-1/call-1"})
	fmt.Println(string(out), err)
	// Output:
	// clauses.search@1.4.0 Search clauses read-only: true gate: <nil>
	// {"ids":["C-7"]} <nil>
}
