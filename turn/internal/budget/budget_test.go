package budget

import (
	"errors"
	"testing"

	agents "github.com/kindgi/agents"
)

func TestCheck(t *testing.T) {
	wall := errors.New("wall")
	cost := 1.0
	cases := []struct {
		name string
		st   State
		more bool
		iter int
		code string
	}{
		{"within", State{ModelCalls: 1, CostUsd: 0.5, ElapsedMs: 10}, true, 1, ""},
		{"cost", State{CostUsd: 1.5}, false, 0, agents.CodeBudgetExceeded},
		{"wall", State{ElapsedMs: 100}, false, 0, agents.CodeTurnAborted},
		{"steps", State{ModelCalls: 3}, true, 1, agents.CodeBudgetExceeded},
		{"steps, no more calls", State{ModelCalls: 3}, false, 1, ""},
		{"iterations", State{ModelCalls: 1}, true, 4, agents.CodeBudgetExceeded},
	}
	for _, c := range cases {
		err := Check(c.st, 3, &cost, 100, c.more, c.iter, 4, wall)
		if got := agents.CodeOf(err); got != c.code {
			t.Errorf("%s: code %q, want %q (%v)", c.name, got, c.code, err)
		}
	}
	var be *agents.BudgetExceededError
	if err := Check(State{ModelCalls: 1}, 9, nil, 100, true, 4, 4, wall); !errors.As(err, &be) || be.Limit != 4 {
		t.Errorf("the steps limit is the lower of maxSteps and maxIter: %v", err)
	}
}
