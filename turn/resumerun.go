package turn

import (
	"context"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// runResumer returns b's bindings.RunResumer when its store offers one and
// is bound, as itself, as the turn's Runs, Snapshots and Hitl; nil
// otherwise.
func runResumer(b *Bindings) bindings.RunResumer {
	rr, ok := b.Runs.(bindings.RunResumer)
	if !ok || !sameBinding(rr.RunResumerStore(), b.Runs) || !sameBinding(b.Runs, b.Snapshots) || !sameBinding(b.Runs, b.Hitl) {
		return nil
	}
	return rr
}

// reopenResuming is reopen, with a bindings.RunResumer in one call that
// also reads the run's approvals (for getApproval); dst is reopen's.
//
// With a bindings.OptimisticRunResumer (and no claim) it leases nothing:
// the run as read, and the lease its first write takes (see
// optimisticresume.go), are returned instead.
func reopenResuming(ctx context.Context, b *Bindings, in ResumeInput, owner string, claimed *bindings.Run, dst []bindings.JournalEntry) (bindings.RunSnapshotRecord, bindings.Run, []bindings.JournalEntry, []bindings.Approval, *pendingLease, error) {
	if claimed == nil {
		if or := optimisticResumer(b); or != nil {
			return readResuming(ctx, b, or, in, owner)
		}
	}
	rr := runResumer(b)
	if rr == nil {
		snap, leased, entries, err := reopen(ctx, b, in, owner, claimed, dst)
		return snap, leased, entries, nil, nil, err
	}
	res, err := rr.ResumeRun(ctx, bindings.ReopenRunInput{TenantID: in.TenantID, RunID: in.RunID, Owner: owner, TTL: leaseTTL(b), Held: claimed != nil})
	if err != nil {
		// As reopen's RunReopener call.
		if agents.CodeOf(err) == "" {
			err = journalError(in.RunID, err)
		}
		if c := agents.CodeOf(err); c != agents.CodeRunBusy && c != agents.CodeRunSnapshotMissing {
			_ = b.Runs.ReleaseLease(context.WithoutCancel(ctx), in.TenantID, in.RunID, owner)
		}
		return bindings.RunSnapshotRecord{}, bindings.Run{}, nil, nil, nil, err
	}
	if claimed != nil {
		res.Run = *claimed
	}
	return res.Snapshot, res.Run, res.Journal, res.Approvals, nil, nil
}

// getApproval is the HITL binding's GetApproval of a parked approval: the
// one ResumeRun read at the start of the drive (once), or the binding's.
func (r *run) getApproval(ctx context.Context, id string) (bindings.Approval, error) {
	if rd := r.reads; rd != nil {
		for i := range rd.approvals {
			if a := rd.approvals[i]; a.Request.ID == id && a.Request.TenantID == r.tenantID {
				rd.approvals = append(rd.approvals[:i:i], rd.approvals[i+1:]...)
				return a, nil
			}
		}
	}
	return r.b.Hitl.GetApproval(ctx, r.tenantID, id)
}
