package main

import (
	"strings"
	"testing"
)

// TestSubagentsOnMemstore runs the example on memstore: the triage run
// parks with the billing run's approval, Resume finishes the tree, the
// refund runs once.
func TestSubagentsOnMemstore(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), "", 0, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"status suspended, waiting on 1 approval(s)",
		"/agent-loop/2/dispatch-tools/call_2/run: acme.refund",
		`status completed: "Your contract allows it, and the $40 duplicate charge on order 1042 is refunded."`,
		"acme.research@1.0.0 completed, 1 model calls, 0 tool calls",
		"acme.billing@1.2.0 completed, 2 model calls, 1 tool calls",
		"usage of the tree: 6 model calls, 3 tool calls",
		"the refund ran 1 time(s)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "refund tool ran"); n != 1 {
		t.Errorf("the refund ran %d times:\n%s", n, got)
	}
}
