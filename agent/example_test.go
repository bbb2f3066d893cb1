package agent_test

import (
	"encoding/json"
	"errors"
	"fmt"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
)

// The example agent of the TypeScript package's documentation: Define validates it and applies defaults.
func ExampleDefine() {
	limit := 5
	steps, cost, wall := 6, 0.25, int64(60_000)
	a, err := agent.Define(agent.Spec{
		ID:           "acme.contract-drafter",
		Version:      "1.0.0",
		Name:         "Contract Drafter",
		Instructions: "You draft contract clauses for {{ firmName }}. Today is {{ today }}.",
		Parameters:   []agent.PromptParameter{{Name: "firmName", Type: agent.TypeString}},
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		Tools: []agent.ToolRef{
			{ID: "acme.clause-search", Version: "^1.0.0"},
			{ID: "acme.send-email", Version: "~2.1.0"},
		},
		Retrieval:  []agent.RetrievalIntent{{Types: []string{"acme.clause"}, Scope: agent.ScopeSameProject, Mode: agent.ModeKeyword, Limit: &limit}},
		Guardrails: []string{"acme.no-pii"},
		ConversationPolicy: &agent.ConversationPolicy{
			Hitl: &agent.HitlPolicy{Tools: &agent.ToolGates{
				Overrides: map[string]agent.ToolGate{"acme.send-email": {Mode: agent.GateAlwaysAsk}},
			}},
		},
		Budget: &agent.TurnBudget{MaxSteps: &steps, MaxCostUsd: &cost, MaxWallMs: &wall},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(a.Ref())
	for _, t := range a.Tools {
		fmt.Printf("tool %s@%s\n", t.ID, t.Version)
	}
	fmt.Println("firmName required:", a.Parameters[0].Required())
	fmt.Println("max steps:", a.Budget.Steps())
	// Output:
	// acme.contract-drafter@1.0.0
	// tool acme.clause-search@^1.0.0
	// tool acme.send-email@~2.1.0
	// firmName required: true
	// max steps: 6
}

// Loading an agent file: json.Unmarshal into a Spec, then Define. Every
// problem is reported, each with a path in JSON names.
func ExampleDefine_issues() {
	file := []byte(`{
		"id": "acme.contract-drafter",
		"version": "1.0",
		"name": "Contract Drafter",
		"instructions": "You draft contract clauses for {{ firmName }}.",
		"parameters": [{"name": "firmName", "type": "string"}],
		"capabilities": [{"needs": [{"feature": "tool-use"}]}],
		"tools": [{"id": "acme.clause-search"}],
		"conversationPolicy": {"hitl": {"tools": {"overrides": {"acme.send-email": "always_ask"}}}}
	}`)
	var spec agent.Spec
	if err := json.Unmarshal(file, &spec); err != nil {
		fmt.Println(err)
		return
	}
	_, err := agent.Define(spec)
	var invalid *agents.InvalidAgentError
	if errors.As(err, &invalid) {
		fmt.Println(agents.CodeOf(err))
		for _, is := range invalid.Issues {
			fmt.Println(is.Path)
		}
	}
	// Output:
	// invalid-agent
	// version
	// tools[0].version
	// conversationPolicy.hitl.tools.overrides.acme.send-email
}

// With no budget and no retrieval limit, Define fills in the defaults.
func ExampleDefine_defaults() {
	a, err := agent.Define(agent.Spec{
		ID:           "acme.helper",
		Version:      "0.1.0",
		Name:         "Helper",
		Instructions: "Help.",
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "chat"}}}},
		Retrieval:    []agent.RetrievalIntent{{Types: []string{"note"}, Scope: agent.ScopeTenant}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(*a.Budget.MaxSteps, *a.Budget.MaxWallMs, *a.Retrieval[0].Limit)
	// Output: 8 120000 10
}
