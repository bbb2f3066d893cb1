package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
)

// TestRunsShowDurationsAreNeverNegative: a run whose first entries were
// stamped by a driver's clock before the store's creation stamp, and whose
// entries are not in clock order, shows no negative step duration.
func TestRunsShowDurationsAreNeverNegative(t *testing.T) {
	store, url, tenant := cliStore(t, "runs-dur-")
	ctx := context.Background()
	run, err := store.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: "r", FlowID: "agent.turn", FlowVersion: "1.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	for i, at := range []time.Time{run.CreatedAt.Add(-59 * time.Microsecond), run.CreatedAt.Add(time.Millisecond), run.CreatedAt.Add(500 * time.Microsecond)} {
		if _, _, err := store.AppendStep(ctx, bindings.AppendStepInput{TenantID: tenant, RunID: "r",
			Entry: bindings.JournalEntry{Key: "step-" + string(rune('a'+i)), Node: "setup", Status: bindings.StepCompleted, At: at}}); err != nil {
			t.Fatal(err)
		}
	}
	r := kindgi(t, "runs", "show", "--json", "--database-url", url, "--tenant", tenant, "r")
	var v struct {
		Steps []struct {
			Key        string  `json:"key"`
			DurationMs float64 `json:"durationMs"`
		} `json:"steps"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &v) != nil || len(v.Steps) != 3 {
		t.Fatalf("runs show --json: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	for _, s := range v.Steps {
		if s.DurationMs < 0 {
			t.Errorf("step %s took %vms, want never negative", s.Key, s.DurationMs)
		}
	}
	if v.Steps[1].DurationMs < 1 {
		t.Errorf("the second step took %vms, want about 1ms (from the first entry)", v.Steps[1].DurationMs)
	}
}
