package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kindgi/agents/internal/pgtest"
)

// TestSubagentsOnMemstore runs the example on memstore: the research
// agent answers as a child run, the turn is handed off to the billing
// agent and parks on its refund's approval (of the triage run itself, no
// child), Resume finishes it as the billing agent, the refund runs once.
func TestSubagentsOnMemstore(t *testing.T) {
	got := runExample(t, "", 0)
	if !strings.Contains(got, "resuming the triage run:") {
		t.Errorf("the memstore run was not finished by Resume:\n%s", got)
	}
}

// TestSubagentsOnPostgres runs the example over PostgreSQL (a fresh
// database) with two workers: after the approval a worker, with no Resume
// call, finishes the turn as the billing agent.
func TestSubagentsOnPostgres(t *testing.T) {
	got := runExample(t, pgtest.FreshDatabase(t, pgtest.AdminURL(t), "kindgi_subagents_"), 2)
	if strings.Contains(got, "resuming the triage run:") || !regexp.MustCompile(`(?m)^  worker [12] drove [0-9a-f]+: completed <nil>$`).MatchString(got) {
		t.Errorf("the PostgreSQL run was not finished by a worker:\n%s", got)
	}
}

// runExample runs the example and checks what both stores print.
func runExample(t *testing.T, pgURL string, workers int) string {
	t.Helper()
	var out strings.Builder
	if err := run(t.Context(), pgURL, workers, &out); err != nil {
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
	return got
}
