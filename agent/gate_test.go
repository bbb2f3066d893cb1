package agent_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kindgi/agents/agent"
)

func TestToolGateJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want agent.ToolGate
		out  string // marshalled form
	}{
		{"string", `"always_ask"`, agent.ToolGate{Mode: agent.GateAlwaysAsk}, `"always_ask"`},
		{"string-with-space", ` "never_ask"`, agent.ToolGate{Mode: agent.GateNeverAsk}, `"never_ask"`},
		{"object", `{"mode":"ask_on_first_use","requiredRole":"admin"}`, agent.ToolGate{Mode: agent.GateAskOnFirstUse, RequiredRole: "admin"}, `{"mode":"ask_on_first_use","requiredRole":"admin"}`},
		{"object-without-role", `{"mode":"always_ask"}`, agent.ToolGate{Mode: agent.GateAlwaysAsk}, `"always_ask"`},
		{"unknown-mode-kept", `"sometimes"`, agent.ToolGate{Mode: "sometimes"}, `"sometimes"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var g agent.ToolGate
			if err := json.Unmarshal([]byte(tt.in), &g); err != nil {
				t.Fatalf("Unmarshal(%s): %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, g); diff != "" {
				t.Errorf("Unmarshal(%s) mismatch (-want +got):\n%s", tt.in, diff)
			}
			out, err := json.Marshal(g)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.out {
				t.Errorf("Marshal = %s, want %s", out, tt.out)
			}
		})
	}
	for _, bad := range []string{`42`, `["always_ask"]`, `true`, `{"mode":1}`} {
		var g agent.ToolGate
		if err := json.Unmarshal([]byte(bad), &g); err == nil {
			t.Errorf("Unmarshal(%s) = %+v, want an error", bad, g)
		}
	}
}

// TestSpecGatesFromJSON reads both gate forms inside an agent file and
// defines it.
func TestSpecGatesFromJSON(t *testing.T) {
	data := []byte(`{
		"id": "acme.gated", "version": "1.0.0", "name": "Gated", "instructions": "x",
		"capabilities": [{"needs": [{"feature": "tool-use"}]}],
		"tools": [{"id": "acme.a", "version": "^1.0.0"}, {"id": "acme.b", "version": "^1.0.0"}],
		"conversationPolicy": {"hitl": {"tools": {
			"default": "ask_on_first_use",
			"overrides": {"acme.a": "never_ask", "acme.b": {"mode": "always_ask", "requiredRole": "legal-lead"}}
		}}}
	}`)
	var s agent.Spec
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	a := mustDefine(t, s)
	want := &agent.ToolGates{
		Default: &agent.ToolGate{Mode: agent.GateAskOnFirstUse},
		Overrides: map[string]agent.ToolGate{
			"acme.a": {Mode: agent.GateNeverAsk},
			"acme.b": {Mode: agent.GateAlwaysAsk, RequiredRole: "legal-lead"},
		},
	}
	if diff := cmp.Diff(want, a.ConversationPolicy.Hitl.Tools); diff != "" {
		t.Errorf("gates mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(a, roundTrip(t, a)); diff != "" {
		t.Errorf("round trip mismatch (-defined +round-tripped):\n%s", diff)
	}
}
