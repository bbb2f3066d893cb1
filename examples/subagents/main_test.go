package main

import (
	"strings"
	"testing"
)

// TestSubagentsOnMemstore runs the example on memstore: the research
// agent answers as a child run, the turn is handed off to the billing
// agent and parks on its refund's approval (of the triage run itself, no
// child), Resume finishes it as the billing agent, the refund runs once.
func TestSubagentsOnMemstore(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), "", 0, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"status suspended, waiting on 1 approval(s)",
		"/agent-loop/3/dispatch-tools/call_3/approval\n",
		`status completed: "Clause 7.2 of your contract allows it: the $40 duplicate charge on order 1042 is refunded."`,
		"answered by acme.billing@1.2.0",
		"acme.research@1.0.0 completed, 1 model calls, 0 tool calls",
		"usage of the tree: 5 model calls, 3 tool calls",
		"the refund ran 1 time(s)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "acme.billing@1.2.0 completed") || strings.Count(got, "sub-run ") != 1 {
		t.Errorf("billing ran as a sub-agent, not a handoff:\n%s", got)
	}
	if n := strings.Count(got, "refund tool ran"); n != 1 {
		t.Errorf("the refund ran %d times:\n%s", n, got)
	}
}
