package turn

import (
	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/turn/internal/childrun"
)

// childContext is what a sub-agent's child run inherits from the call that
// started it (childrun.Context). The parent passes it to the child's
// Invoke in Bindings (Bindings.child); the child records it in its run
// snapshot (childrun.Context.AddTo), so that any later drive of the child
// sees it too, and its setup caps the child's budget by it (capChild) and
// journals its depth.
type childContext = childrun.Context

// maxAgentDepth is Bindings.MaxAgentDepth or its default.
func (b *Bindings) maxAgentDepth() int {
	if b.MaxAgentDepth > 0 {
		return b.MaxAgentDepth
	}
	return DefaultMaxAgentDepth
}

// capChild applies, in a child run's setup, what remains of its parent's
// budget to s.Budget, and records its depth (the child's own caps merged with its tenant's): each
// of cost, steps and wall time is the smaller of the two. A child with
// nothing left of the parent's cost or steps fails here, with
// *agents.BudgetExceededError, before its first model call; with no
// running time left, turn-aborted (timeout). A run that is no child is
// left as it is.
func capChild(s *setupState, c *childContext) error {
	if c == nil {
		return nil
	}
	s.Depth = c.Depth
	b := &s.Budget
	caps, err := c.Cap(childrun.Caps{MaxCostUsd: b.MaxCostUsd, MaxSteps: b.MaxSteps, MaxWallMs: b.MaxWallMs})
	b.MaxCostUsd, b.MaxSteps, b.MaxWallMs = caps.MaxCostUsd, caps.MaxSteps, caps.MaxWallMs
	if err == childrun.ErrNoTimeLeft {
		return &agents.TurnAbortedError{Reason: agents.AbortTimeout, Err: errWallTimeout}
	}
	return err
}

// childContextFor is the context of a child run that call key of r
// starts now: depth one more than r's, and what remains of r's budget.
func (r *run) childContextFor(key string) *childContext {
	c := &childContext{
		ParentRunID: r.id, ParentStepKey: key, Depth: r.s.Depth + 1,
		CostUsedUsd: r.usage.CostUsd,
		StepsLimit:  r.s.Budget.MaxSteps, StepsUsed: r.usage.ModelCalls,
		WallMs: r.s.Budget.MaxWallMs - r.elapsedMs(),
	}
	if r.s.Budget.MaxCostUsd != nil {
		limit := *r.s.Budget.MaxCostUsd
		c.CostLimitUsd = &limit
	}
	return c
}
