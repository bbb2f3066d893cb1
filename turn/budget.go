package turn

import (
	"context"

	"github.com/kindgi/agents/turn/internal/budget"
)

// budgetState is what a budget-check step saw (budget.State).
type budgetState = budget.State

// budgetCheck is the budget-check step of iteration i; more reports that
// the loop needs another model call. The cost cap applies to the usage
// summed across parks (budget-exceeded, kind cost); maxSteps counts model
// calls, so another call past it is budget-exceeded, kind steps; running
// time past maxWallMs is turn-aborted, reason timeout (budget.Check).
func (r *run) budgetCheck(ctx context.Context, i int, more bool) error {
	_, err := decide(ctx, r, keysOf(i).budget, NodeBudgetCheck, func(context.Context, string) (budgetState, error) {
		st := budgetState{ModelCalls: r.usage.ModelCalls, CostUsd: r.usage.CostUsd, ElapsedMs: r.elapsedMs()}
		c := &r.s.Budget
		return st, budget.Check(st, c.MaxSteps, c.MaxCostUsd, c.MaxWallMs, more, i, LoopMaxIterations, errWallTimeout)
	})
	return err
}
