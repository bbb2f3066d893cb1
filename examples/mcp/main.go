// Command mcp runs one turn whose tool comes from an MCP server started
// over stdio: the agent's clauses.search@^1.0.0 is the search tool of the
// clause-library server (server.go, this same program run with -serve),
// which the turn's mcp.ToolSource starts on first use and stops at the
// end. The model is scripted; the store is memstore.
//
//	go run ./examples/mcp
//	go run ./examples/mcp -serve   # the MCP server alone, on stdio
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/mcp"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

const tenantID = "acme"

func main() {
	serveOnly := flag.Bool("serve", false, "run the clause-library MCP server on stdin/stdout instead of a turn")
	flag.Parse()
	ctx := context.Background()
	if *serveOnly {
		if err := serve(ctx); err != nil {
			log.Fatal(err)
		}
		return
	}
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	if err := run(ctx, mcp.Server{Prefix: "clauses", Command: self, Args: []string{"-serve"}}); err != nil {
		log.Fatal(err)
	}
}

// run registers server for the tenant and runs one turn that calls its
// search tool.
func run(ctx context.Context, server mcp.Server) error {
	src, err := mcp.NewToolSource(mcp.Options{
		// Tools the server marks destructive ask a reviewer first.
		DestructiveGate: &agent.ToolGate{Mode: agent.GateAlwaysAsk},
		Stderr:          os.Stderr,
	})
	if err != nil {
		return err
	}
	defer src.Close() // stops the server process
	if err := src.AddServer(tenantID, server); err != nil {
		return err
	}

	tools, err := src.Tools(ctx, tenantID) // starts the server
	if err != nil {
		return err
	}
	for _, d := range tools {
		fmt.Printf("tool %s: %s (read-only: %v)\n", d.Ref(), d.Description, d.Annotations != nil && d.Annotations.ReadOnlyHint)
	}

	a, err := agent.Define(agent.Spec{
		ID: "acme.clause-finder", Version: "1.0.0", Name: "Clause Finder",
		Instructions: "You find clauses in the firm's library.",
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		Tools:        []agent.ToolRef{{ID: "clauses.search", Version: "^1.0.0"}},
	})
	if err != nil {
		return err
	}
	store := memstore.New(nil)
	conv, err := store.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenantID, AgentID: a.ID, AgentVersion: a.Version})
	if err != nil {
		return err
	}
	model := scripted.New([]scripted.Response{
		scripted.Call("call_1", "clauses.search", map[string]string{"query": "confidentiality"}),
		scripted.Say("Clause C-7 covers mutual confidentiality for three years."),
	}, nil)
	b := turn.Bindings{
		Providers: bindings.Providers{model}, Tools: src,
		Conversations: store, Snapshots: store, Runs: store, Hitl: store, Journal: store,
		OnEvent: func(_ context.Context, e turn.Event) {
			switch e := e.(type) {
			case turn.ToolStartedEvent:
				fmt.Printf("tool.started   %s@%s %s\n", e.ToolID, e.ToolVersion, e.Input)
			case turn.ToolCompletedEvent:
				fmt.Printf("tool.completed %s@%s %s\n", e.ToolID, e.ToolVersion, e.Output)
			case turn.ToolFailedEvent:
				fmt.Printf("tool.failed    %s@%s %s\n", e.ToolID, e.ToolVersion, e.Error)
			}
		},
	}
	res, err := turn.Invoke(ctx, turn.Input{TenantID: tenantID, Agent: a, ConversationID: conv.ID, UserMessage: "Which clause covers confidentiality?"}, b)
	if err != nil {
		return err
	}
	usage, _ := json.Marshal(res.Usage)
	fmt.Printf("status %s, usage %s\n", res.Status, usage)
	fmt.Println("response:", res.Response.Content)
	return nil
}
