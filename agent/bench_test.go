package agent_test

import (
	"testing"

	"github.com/kindgi/agents/agent"
)

// BenchmarkDefine defines the example agent of the TypeScript package's documentation (acme.contract-drafter).
func BenchmarkDefine(b *testing.B) {
	s := exampleSpec(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := agent.Define(s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDefineInvalid defines a spec with seven problems, the cost of
// collecting and formatting issues.
func BenchmarkDefineInvalid(b *testing.B) {
	s := exampleSpec(b)
	s.ID = "Acme Drafter"
	s.Version = "v1.0"
	s.Parameters = append(s.Parameters, agent.PromptParameter{Name: "today", Type: agent.TypeString})
	s.Tools[1].Version = ""
	s.Retrieval[0].Limit = ptr(0)
	s.ConversationPolicy.Hitl.Tools.Overrides["acme.unknown"] = agent.ToolGate{Mode: agent.GateNeverAsk}
	s.Budget.MaxSteps = ptr(33)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := agent.Define(s); err == nil {
			b.Fatal("Define accepted an invalid spec")
		}
	}
}
