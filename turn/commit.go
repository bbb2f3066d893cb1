package turn

import (
	"context"
	"errors"
	"fmt"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/internal/alias"
)

// The drive's journal is one journal.Driver (Bindings.Journal, or
// journal.Adapt of the basic bindings): Open at the start of a drive,
// Commit for each of its writes. What Open deferred (Drive.Pending: a new
// run created by its first write, or a resumed run's lease taken by it)
// goes with the drive's first Commit.
//
// Why the crash contract holds with a pending open or lease: the snapshot
// before any effect, and one driver per run.
//   - Before the write that takes what is pending nothing of this drive is
//     stored and it had no external effect: a model call, tool call or
//     approval request that starts fresh starts with a write (its started
//     entry, which carries the buffered decisions); one in flight when a
//     driver died is sent again only after holdLease wrote the buffer or
//     took what is pending alone (a Commit of nothing); every other write
//     — a message append, a provenance emit, a compliance record, an
//     auto-close, a deferred run — takes it first (openPending). A crash
//     before that write leaves the run exactly as it was (or, for a new
//     run, absent: a retry with the same run id starts fresh).
//   - Two drives that read the same run (two Resumes, or a Resume and a
//     claim) or both read a new run as missing (two Invokes of one run
//     id): the driver takes what is pending only if the run is still as
//     read (or still absent), all or nothing. The first write wins; every
//     other stores nothing, before its drive calls anything: run-busy for
//     a lease, errRunOpened for an open (Invoke then opens the run as it
//     finds it).
//   - Until what is pending is taken there is no lease to renew or
//     release; once a write found the run changed the drive writes nothing
//     more (checkLease) and ends run-busy.

// errRunOpened stops a drive whose run another driver created since Open
// read it as missing: nothing of this drive was stored, and Invoke opens
// the run as an existing one. It is coded run-busy for the drive's own
// handling of it.
type errRunOpened struct{ runID string }

func (e *errRunOpened) Error() string {
	return "run " + e.runID + " was opened by another driver since it was read"
}

// Code is agents.CodeRunBusy.
func (e *errRunOpened) Code() string { return agents.CodeRunBusy }

// driverOf is the drive's journal: Bindings.Journal, the store's own
// Driver (native), or journal.Adapt of exactly the basic bindings bound,
// so that a wrapper's methods are never bypassed.
func driverOf(b *Bindings) (d journal.Driver, native bool) {
	if b.Journal != nil {
		return b.Journal, true
	}
	return journal.Adapt(journal.Bindings{Snapshots: b.Snapshots, Runs: b.Runs, Conversations: b.Conversations, Hitl: b.Hitl}), false
}

// setPending records what the drive's first Commit takes (nil: nothing).
func (r *run) setPending(p *journal.Pending) {
	r.pend = p
	r.unheld.Store(p != nil)
}

// commit is the drive's one write: Driver.Commit of in for the drive's
// tenant, run and owner, vouched for (see vouch.go), with what Open left
// pending on the drive's first write.
func (r *run) commit(ctx context.Context, in journal.CommitInput) (journal.Committed, error) {
	in.TenantID, in.RunID, in.Owner, in.Trusted = r.tenantID, r.id, r.owner, true
	p := r.pend
	in.Pending = p
	res, err := r.jd.Commit(ctx, in)
	if p == nil {
		return res, err
	}
	switch {
	case err == nil || res.Entries != nil:
		r.setPending(nil) // taken
	case errors.Is(err, bindings.ErrRunExists):
		return res, &errRunOpened{runID: r.id}
	case p.AsRead != nil && agents.CodeOf(err) == agents.CodeRunBusy:
		// Another driver took the run since Open read it: nothing more is
		// written (checkLease).
		if r.lease != nil {
			r.lease.lost.Store(true)
		}
	}
	return res, err
}

// openPending takes what Open left pending — the new run's open or the
// resumed run's lease — alone, with a Commit of nothing, before a write
// that is not a Commit (a message, an approval request, a provenance
// emit) or a call sent again; nothing when nothing is pending.
func (r *run) openPending(ctx context.Context) error {
	if r.pend == nil {
		return nil
	}
	if err := r.checkLease(); err != nil {
		return err
	}
	if _, err := r.commit(ctx, journal.CommitInput{}); err != nil {
		return coded(err, "take lease")
	}
	return nil
}

// commitEntries writes entries in one Commit (finishing the run with
// finish, when set) and checks that the store returned one entry each.
func (r *run) commitEntries(ctx context.Context, entries []bindings.JournalEntry, finish bindings.RunStatus) ([]bindings.JournalEntry, []bool, error) {
	op := "append journal steps"
	if finish != "" {
		op = "finish run"
	}
	res, err := r.commit(ctx, journal.CommitInput{Entries: entries, Finish: finish})
	if err != nil {
		return nil, nil, coded(err, op)
	}
	if len(res.Entries) != len(entries) || len(res.Appended) != len(entries) {
		return nil, nil, &agents.PersistenceError{Op: op, Err: fmt.Errorf("%d entries written, %d returned", len(entries), len(res.Entries))}
	}
	return res.Entries, res.Appended, nil
}

// getApproval is the HITL binding's GetApproval of a parked approval: the
// one Open read at the start of the drive (once), or the binding's.
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

// inPlace reports whether e's output may be decoded in place, the strings
// decoded sharing its bytes (unmarshalIn): e is an entry of the journal
// Open read for this drive (r.loaded), which is the drive's own and which
// no one writes (journal.Driver's Memory), and its output is not in the
// pooled run's output arena, which later drives write over
// (newOutArena). An entry this drive wrote is decoded from a copy.
func (r *run) inPlace(e *bindings.JournalEntry) bool {
	if !alias.Within(e, r.loaded) {
		return false
	}
	if m := r.mem; m != nil && alias.BytesWithin(e.Output, m.arena) {
		return false
	}
	return true
}
