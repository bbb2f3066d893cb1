package turn

import (
	"context"
	"time"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/drive"
	"github.com/kindgi/agents/turn/internal/sweep"
)

// AgentLookup finds the agent a run was started with, by the id and
// version its snapshot recorded (registry.Agents.Get does this for one
// tenant's registry).
type AgentLookup func(ctx context.Context, tenantID, agentID, version string) (agent.Agent, error)

// ExpireStats counts what one ExpireApprovals sweep did, per approval.
type ExpireStats struct {
	// Listed is how many expired approvals the store listed.
	Listed int `json:"listed"`
	// Moved is how many approvals this sweep moved to their on-timeout
	// action: the sweep's drive of the run journaled the outcome.
	Moved int `json:"moved"`
	// Skipped approvals needed nothing from this sweep: another driver
	// moved them or holds the run right now (run-busy), or the HITL
	// binding does not read them as expired yet.
	Skipped int `json:"skipped"`
	// Failed approvals could not be moved (see Failures); a later sweep
	// tries again.
	Failed   int             `json:"failed"`
	Failures []ExpireFailure `json:"-"`
}

// ExpireFailure is one approval a sweep could not move, with the coded
// error (agents.CodeOf) that stopped it.
type ExpireFailure struct {
	TenantID   string
	RunID      string
	ApprovalID string
	Err        error
}

// ExpireApprovals(ctx, now) is the approval-expiry sweep: every
// parked run whose approval expired is moved to the on-timeout action of
// its effective HITL policy (escalate: a new approval asked one reviewer
// role up; deny: the model is told and the turn goes on; fail: the turn
// fails with hitl-required), exactly once, by driving it with Resume.
//
// b.Hitl must implement bindings.ApprovalSweeper (memstore and pgstore
// do); it lists the expired approvals of suspended runs of every tenant,
// page by page, from the oldest expiry up to now. For each run the sweep
// reads its snapshot, finds its agent with lookup, and calls Resume with
// b: the journal and the run's lease make the outcome happen once whoever
// drives it, so any number of workers may sweep at the same time. A run
// another driver holds (run-busy) is skipped, as is an approval another
// driver already moved. Once the outcome is journaled the sweep marks the
// approval expired (bindings.ApprovalSweeper.MarkApprovalExpired) so that
// it is not listed again. Whether an approval has expired is the HITL
// binding's word, read by Resume on its own clock; now only selects the
// approvals to look at.
//
// An approval that cannot be moved (its agent is gone, its provider no
// longer allowed, a storage failure) is counted in Failed with its error
// in Failures, and the sweep goes on; a later sweep tries again. The
// returned error is for the sweep itself: missing bindings, a failed
// listing, or ctx cancelled (turn-aborted), with the stats of what was
// done until then.
func ExpireApprovals(ctx context.Context, b Bindings, lookup AgentLookup, now time.Time) (ExpireStats, error) {
	var st ExpireStats
	if err := checkBindings(&b, false); err != nil {
		return st, err
	}
	sweeper, err := sweep.ExpireSweeper(b.Hitl, sweep.Lookup(lookup))
	if err != nil {
		return st, err
	}
	n, err := sweep.Expire(ctx, sweep.ExpireInput{
		Sweeper: sweeper, Snapshots: b.Snapshots, Runs: b.Runs, Lookup: sweep.Lookup(lookup), Now: now,
		Resume: func(ctx context.Context, tenantID, runID string, a agent.Agent, rec *sweep.Recorder) error {
			rb := b
			rb.Runs, rb.Journal = rec.Wrap(b.Runs, b.Journal)
			_, err := Resume(ctx, ResumeInput{TenantID: tenantID, RunID: runID, Agent: a}, rb)
			return err
		},
		DerivedID: drive.DerivedID, IDPrefix: drive.IDPrefix,
		Fail: func(ref bindings.ApprovalRef, err error) {
			st.Failures = append(st.Failures, ExpireFailure{TenantID: ref.TenantID, RunID: ref.RunID, ApprovalID: ref.ApprovalID, Err: err})
		},
	})
	st.Listed, st.Moved, st.Skipped, st.Failed = n.Listed, n.Done, n.Skipped, n.Failed
	return st, err
}
