// Package sweep holds the two store sweeps of turn behind
// turn.CloseInactive and turn.ExpireApprovals: closing the conversations
// idle longer than their agent allows, and moving every expired approval
// to its on-timeout action; and the one close a turn's setup does of its
// own idle conversation (AutoClose). It does not import turn: turn gives it the
// bindings it calls and, as function values, what only turn can do.
package sweep

import (
	"context"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/turn/internal/codes"
)

// page is how many refs a sweep asks its store for at a time.
const page = 100

// Lookup finds an agent by tenant, id and version (turn.AgentLookup).
type Lookup func(ctx context.Context, tenantID, agentID, version string) (agent.Agent, error)

// Counts is what one sweep did, per listed conversation or approval:
// turn's CloseStats and ExpireStats, whose Failures the sweep's fail
// function collects.
type Counts struct {
	// Listed is how many the store listed.
	Listed int
	// Done is how many this sweep closed (conversations) or moved
	// (approvals).
	Done int
	// Skipped is how many needed nothing from this sweep.
	Skipped int
	// Failed is how many could not be handled: each was given to fail.
	Failed int
}

// eachPage lists refs page by page (list is given the last ref of the
// page before, the zero ref at first, and the page size) and visits each.
// It stops at a short page, at a failed listing (coded as op), at a
// visit's error, or once ctx is done (turn-aborted).
func eachPage[R any](ctx context.Context, op string, list func(ctx context.Context, after R, limit int) ([]R, error), visit func(R) error) error {
	var after R
	for {
		if err := codes.Aborted(ctx); err != nil {
			return err
		}
		refs, err := list(ctx, after, page)
		if err != nil {
			return codes.Coded(err, op)
		}
		for _, ref := range refs {
			if err := visit(ref); err != nil {
				return err
			}
		}
		if len(refs) < page {
			return nil
		}
		after = refs[len(refs)-1]
	}
}
