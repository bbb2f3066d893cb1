package turn

import (
	"context"
	"sync/atomic"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// The optimistic lease (bindings.OptimisticRunResumer): a Resume reads the
// run — its snapshot, journal, approvals, status, lease and journal
// version — without leasing it (ReadResumeRun), and its first write takes
// the lease in the same transaction, only if the run is still as read
// (AppendStepsAsRead, AppendMessageStepAsRead, FinishRunAsRead; any other
// first write takes it alone first with TakeLeaseAsRead). One commit
// fewer.
//
// Why the crash contract holds: one driver per run, and no side effect
// before the lease.
//   - Before the write that takes the lease this drive has stored nothing
//     and had no external effect. A model call, tool call or approval
//     request that starts fresh starts with a write (its started entry,
//     which carries the buffered decisions). One that was in flight when
//     a driver died — its started entry stored, no result — is sent again
//     without a started entry, so runStep holds the lease first
//     (holdLease: the buffered decisions are written as read, or the
//     lease is taken alone with TakeLeaseAsRead); an approval request in
//     flight takes it (openPending) before it asks again. Every other
//     write — a message append, a provenance emit, a compliance record, an
//     auto-close — takes the lease first too (openPending, holdLease). A
//     crash before that write leaves the run exactly as it was: its
//     journal, status and lease untouched, resumable again.
//   - The saving holds where it is safe: a drive that only replays
//     (a finished run, a run parked on an approval still pending) writes
//     nothing, and a drive whose first action is a write (a fresh model
//     or tool step's started entry, a message step, the finish) takes the
//     lease with that very write, in one commit.
//   - A lease another owner holds unexpired at the read fails the Resume
//     at once (run-busy), calling nothing, as today's ReopenRun does.
//   - Two drives that read the same run (two Resumes, or a Resume and a
//     worker's claim or any lease holder): the first write takes the lease
//     only if the run's status, lease owner and expiry and journal version
//     are still as read, under the run's row lock, all or nothing. The
//     first to write changes them (the lease is its own, and its entries
//     move the journal version), so every other write as read stores
//     nothing and fails with run-busy, before its drive calls anything:
//     the tool runs once more at most, with the request id of the call
//     the crash interrupted (pgstore's TestRacingResumersOfACrashedToolCall
//     races sixteen processes for it). A write that leaves the run exactly as read
//     (say a FinishRun of no entries that keeps the status and releases
//     the lease) lets a later one through, which is then a drive of the
//     same run from the same state, as if it had started after the first
//     ended.
//   - The journal version is read before the journal: an entry appended
//     between the two reads moves it, so the drive's decisions are never
//     made from a journal its write does not check.
//   - Until the lease is taken it is neither renewed nor released; once a
//     write as read found the run changed, the drive writes nothing more
//     (checkLease) and ends run-busy; the run is left to its driver.
//
// A worker's claim leases the run before its drive (Held) and takes
// today's path; so does a store without the capability.

// pendingLease is the lease a resumed drive takes with its first write.
type pendingLease struct {
	or    bindings.OptimisticRunResumer
	lease bindings.LeaseAsRead
	// taken is set once a write took the lease (the renewals, on their own
	// goroutine, read it); lost once a write found the run changed.
	taken atomic.Bool
	lost  atomic.Bool
}

// optimisticResumer returns b's bindings.OptimisticRunResumer when it is
// the turn's RunResumer (runResumer) and bound as itself; nil otherwise.
func optimisticResumer(b *Bindings) bindings.OptimisticRunResumer {
	rr := runResumer(b)
	if rr == nil {
		return nil
	}
	or, ok := rr.(bindings.OptimisticRunResumer)
	if !ok || !sameBinding(or.OptimisticRunResumerStore(), b.Runs) {
		return nil
	}
	return or
}

// readResuming is the optimistic lease's read: the run as ReadResumeRun
// read it, and the lease its first write takes.
func readResuming(ctx context.Context, b *Bindings, or bindings.OptimisticRunResumer, in ResumeInput, owner string) (bindings.RunSnapshotRecord, bindings.Run, []bindings.JournalEntry, []bindings.Approval, *pendingLease, error) {
	res, err := or.ReadResumeRun(ctx, bindings.ReopenRunInput{TenantID: in.TenantID, RunID: in.RunID, Owner: owner, TTL: leaseTTL(b)})
	if err != nil {
		// As reopen's, with nothing leased to release.
		if agents.CodeOf(err) == "" {
			err = journalError(in.RunID, err)
		}
		return bindings.RunSnapshotRecord{}, bindings.Run{}, nil, nil, nil, err
	}
	p := &pendingLease{or: or, lease: bindings.LeaseAsRead{TTL: leaseTTL(b), Run: res.Run, JournalVersion: res.JournalVersion}}
	return res.Snapshot, res.Run, res.Journal, res.Approvals, p, nil
}

// unleased is the lease still to be taken by the drive's first write (nil
// when the drive holds its lease, or took it as before).
func (r *run) unleased() *pendingLease {
	if rd := r.reads; rd != nil && rd.lease != nil && !rd.lease.taken.Load() {
		return rd.lease
	}
	return nil
}

// asRead records the outcome of a write as read of p: the lease taken
// (took), or lost (run-busy: nothing was stored, and the drive writes
// nothing more — checkLease — and ends run-busy).
func (r *run) asRead(p *pendingLease, took bool, err error) {
	switch {
	case took:
		p.taken.Store(true)
	case agents.CodeOf(err) == agents.CodeRunBusy:
		p.lost.Store(true)
		if r.lease != nil {
			r.lease.lost.Store(true)
		}
	}
}

// lostLease is the error of a write after a write as read found the run
// changed: nothing is called.
func (r *run) lostLease(p *pendingLease) error {
	if p.lost.Load() {
		return &agents.RunBusyError{RunID: r.id}
	}
	return nil
}

// takeLease takes the pending lease alone (TakeLeaseAsRead), before a
// write that has no form that takes it; nothing when there is none.
func (r *run) takeLease(ctx context.Context) error {
	p := r.unleased()
	if p == nil {
		return nil
	}
	if err := r.lostLease(p); err != nil {
		return err
	}
	_, err := p.or.TakeLeaseAsRead(ctx, p.lease, bindings.LeaseInput{TenantID: r.tenantID, RunID: r.id, Owner: r.owner, TTL: r.ttl()})
	r.asRead(p, err == nil, err)
	if err != nil {
		return coded(err, "take lease")
	}
	return nil
}

// writesAsRead reports whether w, one of the run's store capabilities
// (batcher, finisher, msgStep), writes to the store of p: then its write
// as read may take its place. Each is set from the run's Runs binding
// only — the store itself, or the journal its bindings.TrustedJournal
// gives, whose writes are the store's own without the checks the turn
// vouches for (see initRun) — so w writes to p's store when it is set and
// Runs is p's.
func (r *run) writesAsRead(w any, p *pendingLease) bool {
	return w != nil && sameBinding(r.b.Runs, p.or)
}

// appendStepsAsRead is the batcher's AppendSteps of a drive with a lease
// still to be taken, or taken by an earlier write (then, or when the
// batcher is not the resumer, as writeEntries writes otherwise).
func (r *run) appendStepsAsRead(ctx context.Context, in bindings.AppendStepsInput) ([]bindings.JournalEntry, []bool, error) {
	if p := r.unleased(); p != nil && r.writesAsRead(r.batcher, p) {
		if err := r.lostLease(p); err != nil {
			return nil, nil, err
		}
		stored, appended, err := p.or.AppendStepsAsRead(ctx, p.lease, in)
		r.asRead(p, err == nil, err)
		return stored, appended, err
	}
	if err := r.openPending(ctx); err != nil {
		return nil, nil, err
	}
	return r.batcher.AppendSteps(ctx, in)
}

// finishRunAsRead is the finisher's FinishRun of a drive with a lease
// still to be taken, or taken (see appendStepsAsRead).
func (r *run) finishRunAsRead(ctx context.Context, in bindings.FinishRunInput) ([]bindings.JournalEntry, []bool, error) {
	if p := r.unleased(); p != nil && r.writesAsRead(r.finisher, p) {
		if err := r.lostLease(p); err != nil {
			return nil, nil, err
		}
		stored, appended, err := p.or.FinishRunAsRead(ctx, p.lease, in)
		r.asRead(p, err == nil, err)
		return stored, appended, err
	}
	if err := r.openPending(ctx); err != nil {
		return nil, nil, err
	}
	return r.finisher.FinishRun(ctx, in)
}

// appendMessageStepAsRead is the message step appender's AppendMessageStep
// of a drive with a lease still to be taken, or taken (see
// appendStepsAsRead). A message refused after the entries before it were
// stored took the lease too.
func (r *run) appendMessageStepAsRead(ctx context.Context, in bindings.MessageStepInput) (bindings.MessageStepResult, error) {
	if p := r.unleased(); p != nil && r.writesAsRead(r.msgStep, p) {
		if err := r.lostLease(p); err != nil {
			return bindings.MessageStepResult{}, err
		}
		res, err := p.or.AppendMessageStepAsRead(ctx, p.lease, in)
		r.asRead(p, err == nil || res.Entries != nil, err)
		return res, err
	}
	if err := r.openPending(ctx); err != nil {
		return bindings.MessageStepResult{}, err
	}
	return r.msgStep.AppendMessageStep(ctx, in)
}
