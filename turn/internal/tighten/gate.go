package tighten

import "github.com/kindgi/agents/agent"

// Gate returns the gate of tool toolID: the agent's gates' (its override,
// else its default, else never_ask; never_ask when gates is nil), an
// unknown mode taken as always_ask, raised to the tenant's floors for the
// tool and for "*" (turn's EffectiveHitlPolicy.Gate).
func Gate(gates *agent.ToolGates, floors map[string]agent.ToolGate, toolID string) agent.ToolGate {
	g := agent.ToolGate{Mode: agent.GateNeverAsk}
	if gates != nil {
		if o, ok := gates.Overrides[toolID]; ok {
			g = o
		} else if gates.Default != nil {
			g = *gates.Default
		}
	}
	if g.Mode.Strictness() < 0 {
		g.Mode = agent.GateAlwaysAsk // an unknown mode asks: never loosen
	}
	if f, ok := floors["*"]; ok {
		g = StricterGate(g, f)
	}
	if f, ok := floors[toolID]; ok {
		g = StricterGate(g, f)
	}
	return g
}
