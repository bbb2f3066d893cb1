package agent_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
)

// FuzzDefine feeds JSON agent files to Define. Define must never panic,
// must fail only with an *agents.InvalidAgentError that has issues, and
// when it succeeds the agent must round-trip through JSON to an equal
// agent.
func FuzzDefine(f *testing.F) {
	example, err := os.ReadFile("testdata/contract-drafter.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	for _, seed := range []string{
		`{}`,
		`{"id":"a","version":"1.0.0","name":"n","instructions":"x","capabilities":[{"needs":[{"feature":"f"}]}]}`,
		`{"id":"a","version":"1.0.0-rc.1+b","name":"n","instructions":"{% if p %}{{ p | upcase }}{% endif %}","capabilities":[{"needs":[{"feature":"f"}]}],` +
			`"parameters":[{"name":"p","type":"integer","default":3},{"name":"o","type":"object","default":{"a":[1,"x",null]}},{"name":"q","type":"array","optional":true}],` +
			`"tools":[{"id":"t","version":">=1.0.0 <2.0.0 || ^3"}],"retrieval":[{"types":["x"],"scope":"tenant"}],"guardrails":["g"],"tags":["a"],` +
			`"conversationPolicy":{"historyLimit":0,"hitlAfterTurns":2,"hitl":{"afterTurns":1,"timeoutMs":5,"defaultReviewerRole":"r","tools":{"default":{"mode":"ask_on_first_use","requiredRole":"admin"},"overrides":{"t":"never_ask"}}}},` +
			`"budget":{"maxSteps":32,"maxCostUsd":0,"maxWallMs":1}}`,
		`{"id":"A","version":"v1","name":"","instructions":"{{","capabilities":[{"needs":[]}],"tools":[{"id":"t"},{"id":"t","version":"x"}],` +
			`"retrieval":[{"types":[""],"scope":"?","limit":0,"mode":"?"}],"guardrails":["",""],"conversationPolicy":{"historyLimit":-1,"hitl":{"tools":{"overrides":{"u":"?"}}}},"budget":{"maxSteps":0,"maxCostUsd":-1,"maxWallMs":0}}`,
		`{"id":"a","version":"1.0.0","name":"n","instructions":"x","capabilities":[{"needs":[{"feature":"f"}]}],"parameters":[{"name":"n","type":"number","default":1e308}]}`,
		`{"id":"a","version":"1.0.0","name":"n","instructions":"x","capabilities":[{"needs":[{"feature":"f"}]}],"tools":[{"id":"t","version":"^1"}],` +
			`"subAgents":[{"id":"r","version":"^1.0.0","name":"research","description":"d"},{"id":"a","version":"*"}],"handoffs":[{"id":"b","version":"~2"}]}`,
		`{"id":"a","version":"1.0.0","name":"n","instructions":"x","capabilities":[{"needs":[{"feature":"f"}]}],"tools":[{"id":"t","version":"^1"}],` +
			`"subAgents":[{"id":"r","version":""},{"id":"r","version":"x","name":"t"}],"handoffs":[{"id":"a","version":"1"},{"id":"B","name":"R S"}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s agent.Spec
		if err := json.Unmarshal(data, &s); err != nil {
			return
		}
		a, err := agent.Define(s)
		// Define is deterministic: a second call reports the same issues
		// in the same order, or the same agent.
		a2, err2 := agent.Define(s)
		if diff := cmp.Diff(fmt.Sprint(err), fmt.Sprint(err2)); diff != "" {
			t.Fatalf("two Define calls disagree (-first +second):\n%s", diff)
		}
		if err != nil {
			var inv *agents.InvalidAgentError
			if !errors.As(err, &inv) || len(inv.Issues) == 0 {
				t.Fatalf("Define error %T %v is not an InvalidAgentError with issues", err, err)
			}
			return
		}
		if diff := cmp.Diff(a, a2); diff != "" {
			t.Fatalf("two Define calls disagree (-first +second):\n%s", diff)
		}
		if diff := cmp.Diff(a, roundTrip(t, a)); diff != "" {
			t.Fatalf("round trip mismatch (-first +second):\n%s", diff)
		}
	})
}
