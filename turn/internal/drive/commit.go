package drive

import (
	"context"
	"errors"
	"fmt"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
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
//     driver died is sent again only after HoldLease wrote the buffer or
//     took what is pending alone (a Commit of nothing); every other write
//     — a message append, a provenance emit, a compliance record, an
//     auto-close, a deferred run — takes it first (OpenPending). A crash
//     before that write leaves the run exactly as it was (or, for a new
//     run, absent: a retry with the same run id starts fresh).
//   - Two drives that read the same run (two Resumes, or a Resume and a
//     claim) or both read a new run as missing (two Invokes of one run
//     id): the driver takes what is pending only if the run is still as
//     read (or still absent), all or nothing. The first write wins; every
//     other stores nothing, before its drive calls anything: run-busy for
//     a lease, *RunOpenedError for an open (Invoke then opens the run as
//     it finds it).
//   - Until what is pending is taken there is no lease to renew or
//     release; once a write found the run changed the drive writes nothing
//     more (CheckLease) and ends run-busy.

// RunOpenedError stops a drive whose run another driver created since
// Open read it as missing: nothing of this drive was stored, and Invoke
// opens the run as an existing one. It is coded run-busy for the drive's
// own handling of it.
type RunOpenedError struct{ RunID string }

// Error says which run was opened.
func (e *RunOpenedError) Error() string {
	return "run " + e.RunID + " was opened by another driver since it was read"
}

// Code is agents.CodeRunBusy.
func (e *RunOpenedError) Code() string { return agents.CodeRunBusy }

// SetPending records what the drive's first Commit takes (nil: nothing).
func (j *Journal) SetPending(p *journal.Pending) {
	j.pend = p
	j.unheld.Store(p != nil)
}

// commit is the drive's one write: Driver.Commit of in for the drive's
// tenant, run and owner, vouched for (see the turn's vouch.go), with what
// Open left pending on the drive's first write.
func (j *Journal) commit(ctx context.Context, in journal.CommitInput) (journal.Committed, error) {
	in.TenantID, in.RunID, in.Owner, in.Trusted = j.tenantID, j.runID, j.owner, true
	p := j.pend
	in.Pending = p
	res, err := j.jd.Commit(ctx, in)
	if p == nil {
		return res, err
	}
	switch {
	case err == nil || res.Entries != nil:
		j.SetPending(nil) // taken
	case errors.Is(err, bindings.ErrRunExists):
		return res, &RunOpenedError{RunID: j.runID}
	case p.AsRead != nil && agents.CodeOf(err) == agents.CodeRunBusy:
		// Another driver took the run since Open read it: nothing more is
		// written (CheckLease).
		if j.lease != nil {
			j.lease.lost.Store(true)
		}
	}
	return res, err
}

// Finish writes the run's status (and releases its lease) in a Commit
// of nothing else.
func (j *Journal) Finish(ctx context.Context, status bindings.RunStatus) error {
	_, err := j.commit(ctx, journal.CommitInput{Finish: status})
	return err
}

// OpenPending takes what Open left pending — the new run's open or the
// resumed run's lease — alone, with a Commit of nothing, before a write
// that is not a Commit (a message, an approval request, a provenance
// emit) or a call sent again; nothing when nothing is pending.
func (j *Journal) OpenPending(ctx context.Context) error {
	if j.pend == nil {
		return nil
	}
	if err := j.CheckLease(); err != nil {
		return err
	}
	if _, err := j.commit(ctx, journal.CommitInput{}); err != nil {
		return Coded(err, "take lease")
	}
	return nil
}

// commitEntries writes entries in one Commit (finishing the run with
// finish, when set) and checks that the store returned one entry each.
func (j *Journal) commitEntries(ctx context.Context, entries []bindings.JournalEntry, finish bindings.RunStatus) ([]bindings.JournalEntry, []bool, error) {
	op := "append journal steps"
	if finish != "" {
		op = "finish run"
	}
	res, err := j.commit(ctx, journal.CommitInput{Entries: entries, Finish: finish})
	if err != nil {
		return nil, nil, Coded(err, op)
	}
	if len(res.Entries) != len(entries) || len(res.Appended) != len(entries) {
		return nil, nil, &agents.PersistenceError{Op: op, Err: fmt.Errorf("%d entries written, %d returned", len(entries), len(res.Entries))}
	}
	return res.Entries, res.Appended, nil
}

// Coded returns err when it carries a code, and a *agents.PersistenceError
// naming op otherwise.
func Coded(err error, op string) error {
	if agents.CodeOf(err) != "" {
		return err
	}
	return &agents.PersistenceError{Op: op, Err: err}
}
