package turn

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/turn/internal/childrun"
)

// TestSnapshotChildRoundTrips: the child context added to a snapshot's
// input reads back (also after a store reformats the JSON, as jsonb
// does), decoding the input into an Input ignores it, and an input
// without it reads none.
func TestSnapshotChildRoundTrips(t *testing.T) {
	cost := 0.25
	c := &childContext{ParentRunID: "p", ParentStepKey: "agent-loop/1/dispatch-tools/c", Depth: 2, CostLimitUsd: &cost, CostUsedUsd: 0.1, StepsLimit: 6, StepsUsed: 2, WallMs: 5000}
	in := Input{TenantID: "t", ConversationID: "c", UserMessage: `say "subRun": {}`, Parameters: map[string]any{"k": "v"}}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := childrun.FromSnapshot(raw); got != nil {
		t.Fatalf("an input that is no child's reads %+v", got)
	}
	with, err := c.AddTo(raw)
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != string(mustMarshal(t, in)) {
		t.Fatal("AddTo wrote to its input")
	}
	var back Input
	if err := json.Unmarshal(with, &back); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(in, back, cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "Agent" }, cmp.Ignore())); d != "" {
		t.Errorf("the input changed (-want +got):\n%s", d)
	}
	if d := cmp.Diff(c, childrun.FromSnapshot(with), cmp.AllowUnexported(childContext{})); d != "" {
		t.Errorf("child context (-want +got):\n%s", d)
	}
	var reformatted any
	if err := json.Unmarshal(with, &reformatted); err != nil {
		t.Fatal(err)
	}
	spaced, err := json.MarshalIndent(reformatted, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(c, childrun.FromSnapshot(spaced), cmp.AllowUnexported(childContext{})); d != "" {
		t.Errorf("child context of reformatted JSON (-want +got):\n%s", d)
	}
	if empty, _ := c.AddTo(json.RawMessage(`{}`)); childrun.FromSnapshot(empty) == nil || !json.Valid(empty) {
		t.Errorf("AddTo of {} gives %s", empty)
	}
}

// TestCapChild: each cap is the smaller of the child's own and what
// remains of the parent's; nothing left of the cost or steps is
// budget-exceeded, of the wall time turn-aborted (timeout).
func TestCapChild(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		name  string
		own   budgetCaps
		child childContext
		want  budgetCaps
		code  string
	}{
		{"parent's remainder is smaller", budgetCaps{MaxSteps: 8, MaxCostUsd: f(1), MaxWallMs: 60000},
			childContext{CostLimitUsd: f(0.5), CostUsedUsd: 0.25, StepsLimit: 6, StepsUsed: 2, WallMs: 1000},
			budgetCaps{MaxSteps: 4, MaxCostUsd: f(0.25), MaxWallMs: 1000}, ""},
		{"own caps are smaller", budgetCaps{MaxSteps: 2, MaxCostUsd: f(0.1), MaxWallMs: 500},
			childContext{CostLimitUsd: f(0.5), StepsLimit: 6, WallMs: 1000},
			budgetCaps{MaxSteps: 2, MaxCostUsd: f(0.1), MaxWallMs: 500}, ""},
		{"no cost cap of its own", budgetCaps{MaxSteps: 2, MaxWallMs: 500},
			childContext{CostLimitUsd: f(0.5), CostUsedUsd: 0.125, StepsLimit: 6, WallMs: 1000},
			budgetCaps{MaxSteps: 2, MaxCostUsd: f(0.375), MaxWallMs: 500}, ""},
		{"no cost left", budgetCaps{MaxSteps: 2, MaxWallMs: 500}, childContext{CostLimitUsd: f(0.5), CostUsedUsd: 0.5, StepsLimit: 6, WallMs: 1000}, budgetCaps{}, agents.CodeBudgetExceeded},
		{"no steps left", budgetCaps{MaxSteps: 2, MaxWallMs: 500}, childContext{StepsLimit: 6, StepsUsed: 6, WallMs: 1000}, budgetCaps{}, agents.CodeBudgetExceeded},
		{"no time left", budgetCaps{MaxSteps: 2, MaxWallMs: 500}, childContext{StepsLimit: 6, WallMs: 0}, budgetCaps{}, agents.CodeTurnAborted},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := setupState{Budget: c.own}
			child := c.child
			child.Depth = 3
			err := capChild(&s, &child)
			if agents.CodeOf(err) != c.code {
				t.Fatalf("error %v, want code %q", err, c.code)
			}
			if c.code != "" {
				return
			}
			if d := cmp.Diff(c.want, s.Budget); d != "" {
				t.Errorf("caps (-want +got):\n%s", d)
			}
			if s.Depth != 3 {
				t.Errorf("depth %d", s.Depth)
			}
		})
	}
}
