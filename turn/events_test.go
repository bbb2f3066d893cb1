package turn_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kindgi/agents/turn"
)

func TestNodeEventsPrintTheirNode(t *testing.T) {
	started := turn.NodeStartedEvent{RunID: "r1", Node: turn.NodeModelCall, Key: "agent-loop/1/model-call"}
	completed := turn.NodeCompletedEvent{RunID: "r1", Node: turn.NodeDispatchTools, Key: "agent-loop/1/dispatch-tools/c1", Code: "tool-invocation-failed"}
	for _, c := range []struct {
		e        turn.Event
		wantJSON map[string]any
		wantStr  string
	}{
		{started, map[string]any{"kind": "node.started", "runId": "r1", "node": "model-call", "key": "agent-loop/1/model-call"},
			"node.started model-call (step agent-loop/1/model-call) run r1"},
		{completed, map[string]any{"kind": "node.completed", "runId": "r1", "node": "dispatch-tools", "key": "agent-loop/1/dispatch-tools/c1", "code": "tool-invocation-failed"},
			"node.completed dispatch-tools (step agent-loop/1/dispatch-tools/c1) run r1 failed: tool-invocation-failed"},
		{turn.NodeCompletedEvent{RunID: "r1", Node: turn.NodeSetup, Key: "setup"}, map[string]any{"kind": "node.completed", "runId": "r1", "node": "setup", "key": "setup"},
			"node.completed setup (step setup) run r1"},
	} {
		raw, err := json.Marshal(c.e)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(c.wantJSON, got); d != "" {
			t.Errorf("%T JSON (-want +got):\n%s", c.e, d)
		}
		if s := fmt.Sprint(c.e); s != c.wantStr {
			t.Errorf("%T prints %q, want %q", c.e, s, c.wantStr)
		}
	}
	// A pointer prints the same (fmt finds String on the value).
	if s := fmt.Sprint(&started); s != started.String() {
		t.Errorf("*NodeStartedEvent prints %q", s)
	}
}
