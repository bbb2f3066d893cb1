package turn_test

import (
	"context"
	"testing"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// subAnchorModel is the anchor model for a tree: a tool result gets the
// answer; otherwise the first tool is called, with the anchor's query for
// clause_search and a message for a sub-agent.
type subAnchorModel struct{ anchorModel }

var subAnchorArgs = []byte(`{"message":"Find the NDA clause."}`)

func (m subAnchorModel) Generate(ctx context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	res, err := m.anchorModel.Generate(ctx, req)
	if len(res.ToolCalls) == 1 && res.ToolCalls[0].Name != "clause_search" {
		res.ToolCalls[0].Arguments = subAnchorArgs
	}
	return res, err
}

// subAnchorFixture is the anchor workload one level down: a parent agent
// whose one tool is the anchor agent as a sub-agent, so that a turn is the
// parent's two model calls around one child run, which is the anchor
// turn (two model calls and the clause_search call) in a conversation of
// its own.
func subAnchorFixture(tb testing.TB) (agent.Agent, *memstore.Store, turn.Bindings) {
	tb.Helper()
	child, store, b := anchorFixture(tb, false)
	parent, err := agent.Define(agent.Spec{
		ID: "bench.parent", Version: "1.0.0", Name: "Parent", Instructions: anchorInstruction,
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		SubAgents:    []agent.AgentRef{{ID: child.ID, Version: "^1.0.0", Name: "clause_agent", Description: "Finds clauses."}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	reg, err := registry.NewAgents(parent, child)
	if err != nil {
		tb.Fatal(err)
	}
	b.Providers = bindings.Providers{subAnchorModel{}}
	b.Agents, b.AgentVersions = reg.Lookup, reg.Versions
	return parent, store, b
}

// TestAnchorSubAgentTurn checks the tree workload does what it says.
func TestAnchorSubAgentTurn(t *testing.T) {
	a, store, b := subAnchorFixture(t)
	res, err := invokeAnchor(t.Context(), a, store, b)
	if err != nil {
		t.Fatal(err)
	}
	if res.Response.Content != "Here is the clause." || res.Usage.ModelCalls != 4 || res.Usage.ToolCalls != 2 || len(res.SubRuns) != 1 || res.SubRuns[0].Usage.ToolCalls != 1 {
		t.Fatalf("result = %+v", res)
	}
}

// BenchmarkAnchorSubAgentTurn is one turn with one sub-agent call on
// memstore (the parent's two model calls around a child run that is the
// anchor turn), each on a fresh conversation: against two anchor turns
// (BenchmarkAnchorTurn), what a child run costs beyond the work itself.
func BenchmarkAnchorSubAgentTurn(b *testing.B) {
	a, store, bb := subAnchorFixture(b)
	benchAnchorTurns(b, a, store, bb, 2)
}
