package turn

import (
	"context"

	agents "github.com/kindgi/agents"
)

// budgetState is what a budget-check step saw.
type budgetState struct {
	ModelCalls int     `json:"modelCalls"`
	CostUsd    float64 `json:"costUsd"`
	ElapsedMs  int64   `json:"elapsedMs"`
}

// budgetCheck is the budget-check step of iteration i; more reports that
// the loop needs another model call. The cost cap applies to the usage
// summed across parks (budget-exceeded, kind cost); maxSteps counts model
// calls, so another call past it is budget-exceeded, kind steps; running
// time past maxWallMs is turn-aborted, reason timeout.
func (r *run) budgetCheck(ctx context.Context, i int, more bool) error {
	_, err := decide(ctx, r, keysOf(i).budget, NodeBudgetCheck, func(context.Context, string) (budgetState, error) {
		st := budgetState{ModelCalls: r.usage.ModelCalls, CostUsd: r.usage.CostUsd, ElapsedMs: r.elapsedMs()}
		caps := r.s.Budget
		if caps.MaxCostUsd != nil && st.CostUsd > *caps.MaxCostUsd {
			return st, &agents.BudgetExceededError{Kind: agents.BudgetCost, Limit: *caps.MaxCostUsd, Used: st.CostUsd}
		}
		if st.ElapsedMs >= caps.MaxWallMs {
			return st, &agents.TurnAbortedError{Reason: agents.AbortTimeout, Err: errWallTimeout}
		}
		if more && (st.ModelCalls >= caps.MaxSteps || i >= LoopMaxIterations) {
			limit := caps.MaxSteps
			if LoopMaxIterations < limit {
				limit = LoopMaxIterations
			}
			return st, &agents.BudgetExceededError{Kind: agents.BudgetSteps, Limit: float64(limit), Used: float64(st.ModelCalls)}
		}
		return st, nil
	})
	return err
}
