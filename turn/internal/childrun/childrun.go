// Package childrun is what a sub-agent's child run inherits from the call
// that started it: its place in the tree (parent run, parent step, depth)
// and what remains of the parent's budget. The parent passes a Context to
// the child's drive; the child records it in its run snapshot's input
// (AddTo), so that any later drive of the child — a Resume or a Worker's,
// in another process — reads it back (FromSnapshot), and its setup caps
// the child's budget by it (Cap).
package childrun

import (
	"bytes"
	"encoding/json"
	"errors"

	agents "github.com/kindgi/agents"
)

// Context is what a child run inherits from the call that started it.
type Context struct {
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
	// Fresh says no drive created the child run before: the parent's
	// drive stored the call's started entry itself, and a child run is
	// created only after it. Invoke then skips reading the snapshot of a
	// run that cannot exist (a run opened meanwhile still shows in its
	// journal). Not recorded.
	Fresh bool `json:"-"`
}

// SnapshotKey is the member of a child run's snapshot input that holds
// its Context (next to the turn input's own members, which decoding the
// snapshot into a turn input ignores it among).
const SnapshotKey = "subRun"

// snapshotMark is how that member begins in the snapshot's JSON (a store
// may add space after it, as PostgreSQL's jsonb does).
var snapshotMark = []byte(`"` + SnapshotKey + `"`)

// AddTo returns raw, a run snapshot's input (a JSON object), with c
// added as its SnapshotKey member. raw is not written to.
func (c *Context) AddTo(raw json.RawMessage) (json.RawMessage, error) {
	cb, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	end := bytes.LastIndexByte(raw, '}')
	if end < 0 {
		return raw, nil
	}
	out := make([]byte, 0, len(raw)+len(cb)+len(snapshotMark)+2)
	out = append(out, raw[:end]...)
	if len(bytes.TrimSpace(raw[1:end])) > 0 { // not {}: after a member
		out = append(out, ',')
	}
	out = append(out, snapshotMark...)
	out = append(out, ':')
	out = append(out, cb...)
	out = append(out, raw[end:]...)
	return out, nil
}

// FromSnapshot returns the Context a child run's snapshot input holds,
// nil for a run that is not a sub-agent's child.
func FromSnapshot(raw json.RawMessage) *Context {
	if !bytes.Contains(raw, snapshotMark) {
		return nil
	}
	var v struct {
		Child *Context `json:"subRun"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v.Child
}

// Caps are the budget caps of a child run that Cap bounds: cost (nil:
// none), model calls and running time.
type Caps struct {
	MaxCostUsd *float64
	MaxSteps   int
	MaxWallMs  int64
}

// ErrNoTimeLeft is Cap's error for a child with none of its parent's
// running time left (turn fails it turn-aborted, timeout).
var ErrNoTimeLeft = errors.New("childrun: no running time left")

// Cap returns caps, a child run's own, bounded by what remains of its
// parent's budget: each of cost, steps and wall time is the smaller of
// the two. A child with nothing left of the parent's cost or steps is
// *agents.BudgetExceededError, with no running time left ErrNoTimeLeft;
// the caps are then as far as Cap got.
func (c *Context) Cap(caps Caps) (Caps, error) {
	if c.CostLimitUsd != nil {
		left := *c.CostLimitUsd - c.CostUsedUsd
		if left <= 0 {
			return caps, &agents.BudgetExceededError{Kind: agents.BudgetCost, Limit: *c.CostLimitUsd, Used: c.CostUsedUsd}
		}
		if caps.MaxCostUsd == nil || left < *caps.MaxCostUsd {
			caps.MaxCostUsd = &left
		}
	}
	if c.StepsLimit > 0 {
		left := c.StepsLimit - c.StepsUsed
		if left <= 0 {
			return caps, &agents.BudgetExceededError{Kind: agents.BudgetSteps, Limit: float64(c.StepsLimit), Used: float64(c.StepsUsed)}
		}
		caps.MaxSteps = min(caps.MaxSteps, left)
	}
	if c.WallMs <= 0 {
		return caps, ErrNoTimeLeft
	}
	caps.MaxWallMs = min(caps.MaxWallMs, c.WallMs)
	return caps, nil
}
