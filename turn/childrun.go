package turn

import (
	"bytes"
	"encoding/json"

	agents "github.com/kindgi/agents"
)

// childContext is what a sub-agent's child run inherits from the call that
// started it: its place in the tree (parent run, parent step, depth) and
// what remains of the parent's budget when the call started. The parent
// passes it to the child's Invoke in Bindings (Bindings.child); the child
// records it in its run snapshot (withChild), so that any later drive of
// the child — a Resume or a Worker's, in another process — sees it too,
// and its setup caps the child's budget by it (capChild) and journals its
// depth.
type childContext struct {
	ParentRunID   string `json:"parentRunId"`
	ParentStepKey string `json:"parentStepKey"`
	Depth         int    `json:"depth"`
	// CostLimitUsd and CostUsedUsd are the parent's cost cap (nil: none)
	// and what the parent's tree had used when the call started.
	CostLimitUsd *float64 `json:"costLimitUsd,omitempty"`
	CostUsedUsd  float64  `json:"costUsedUsd,omitempty"`
	// StepsLimit and StepsUsed are the parent's maxSteps and the model
	// calls its tree had made.
	StepsLimit int `json:"stepsLimit"`
	StepsUsed  int `json:"stepsUsed,omitempty"`
	// WallMs is the running time the parent had left.
	WallMs int64 `json:"wallMs"`
	// fresh says no drive created the child run before: the parent's drive
	// stored the call's started entry itself, and a child run is created
	// only after it. Invoke then skips reading the snapshot of a run that
	// cannot exist (a run opened meanwhile still shows in its journal).
	fresh bool
}

// snapshotChildKey is the member of a child run's snapshot input that
// holds its childContext (next to the Input's own members, which decoding
// the snapshot into an Input ignores it among).
const snapshotChildKey = "subRun"

// snapshotChildMark is how that member begins in the snapshot's JSON (a
// store may add space after it, as PostgreSQL's jsonb does).
var snapshotChildMark = []byte(`"` + snapshotChildKey + `"`)

// withChild returns raw, a run snapshot's input (a JSON object), with c
// added as its subRun member. raw is not written to.
func withChild(raw json.RawMessage, c *childContext) (json.RawMessage, error) {
	cb, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	end := bytes.LastIndexByte(raw, '}')
	if end < 0 {
		return raw, nil
	}
	out := make([]byte, 0, len(raw)+len(cb)+len(snapshotChildMark)+2)
	out = append(out, raw[:end]...)
	if len(bytes.TrimSpace(raw[1:end])) > 0 { // not {}: after a member
		out = append(out, ',')
	}
	out = append(out, snapshotChildMark...)
	out = append(out, ':')
	out = append(out, cb...)
	out = append(out, raw[end:]...)
	return out, nil
}

// snapshotChild returns the childContext a child run's snapshot input
// holds, nil for a run that is not a sub-agent's child. Resume reads it
// for a run whose record names a parent (bindings.Run.ParentRunID).
func snapshotChild(raw json.RawMessage) *childContext {
	if !bytes.Contains(raw, snapshotChildMark) {
		return nil
	}
	var v struct {
		Child *childContext `json:"subRun"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v.Child
}

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
	caps := &s.Budget
	if c.CostLimitUsd != nil {
		left := *c.CostLimitUsd - c.CostUsedUsd
		if left <= 0 {
			return &agents.BudgetExceededError{Kind: agents.BudgetCost, Limit: *c.CostLimitUsd, Used: c.CostUsedUsd}
		}
		if caps.MaxCostUsd == nil || left < *caps.MaxCostUsd {
			caps.MaxCostUsd = &left
		}
	}
	if c.StepsLimit > 0 {
		left := c.StepsLimit - c.StepsUsed
		if left <= 0 {
			return &agents.BudgetExceededError{Kind: agents.BudgetSteps, Limit: float64(c.StepsLimit), Used: float64(c.StepsUsed)}
		}
		caps.MaxSteps = min(caps.MaxSteps, left)
	}
	if c.WallMs <= 0 {
		return &agents.TurnAbortedError{Reason: agents.AbortTimeout, Err: errWallTimeout}
	}
	caps.MaxWallMs = min(caps.MaxWallMs, c.WallMs)
	return nil
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
