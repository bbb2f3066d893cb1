// Package budget is a turn's budget check, run before each model call of
// its loop and once after it: what a budget-check step saw (State, the
// step's journaled output) and the caps it checks it against. It imports
// nothing of turn: the caps come as plain values.
package budget

import agents "github.com/kindgi/agents"

// State is what a budget-check step saw: the usage summed across parks
// and the run's running time.
type State struct {
	ModelCalls int     `json:"modelCalls"`
	CostUsd    float64 `json:"costUsd"`
	ElapsedMs  int64   `json:"elapsedMs"`
}

// Check checks st against the caps maxSteps (model calls), maxCostUsd
// (nil: none) and maxWallMs; more says the loop, at iteration iter of at
// most maxIter, needs another model call. Cost past its cap is
// budget-exceeded (kind cost); running time past maxWallMs is
// turn-aborted (reason timeout), with wallErr its cause; another call past
// maxSteps or maxIter is budget-exceeded (kind steps).
func Check(st State, maxSteps int, maxCostUsd *float64, maxWallMs int64, more bool, iter, maxIter int, wallErr error) error {
	if maxCostUsd != nil && st.CostUsd > *maxCostUsd {
		return &agents.BudgetExceededError{Kind: agents.BudgetCost, Limit: *maxCostUsd, Used: st.CostUsd}
	}
	if st.ElapsedMs >= maxWallMs {
		return &agents.TurnAbortedError{Reason: agents.AbortTimeout, Err: wallErr}
	}
	if more && (st.ModelCalls >= maxSteps || iter >= maxIter) {
		return &agents.BudgetExceededError{Kind: agents.BudgetSteps, Limit: float64(min(maxSteps, maxIter)), Used: float64(st.ModelCalls)}
	}
	return nil
}
