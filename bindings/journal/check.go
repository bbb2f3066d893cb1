package journal

import (
	"fmt"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// CheckOpen returns an *agents.InvalidMessageError for an OpenInput no
// driver accepts: a tenant or run id that breaks bindings.CheckID, an
// owner that breaks CheckOptionalID, an unknown lease mode, a negative TTL
// or history limit, or a Create whose snapshot names another run or whose
// parent breaks bindings.CheckParent. Drivers call it first in Open.
func CheckOpen(in OpenInput) error {
	if err := firstErr(bindings.CheckID("tenant id", in.TenantID), bindings.CheckID("run id", in.RunID),
		bindings.CheckOptionalID("lease owner", in.Owner)); err != nil {
		return err
	}
	switch {
	case in.Lease > LeaseOnWrite:
		return invalid(fmt.Sprintf("unknown lease mode %d", in.Lease))
	case in.TTL < 0:
		return invalid("lease TTL is negative")
	case in.HistoryLimit < 0:
		return invalid("history limit is negative")
	case in.Lease == LeaseHeld && in.Create != nil:
		return invalid("a new run's lease cannot be held already")
	}
	if c := in.Create; c != nil {
		if c.Snapshot.TenantID != in.TenantID || c.Snapshot.RunID != in.RunID {
			return invalid("the snapshot names another run than the open")
		}
		if c.Status != "" && c.Status != bindings.RunRunning && c.Status != bindings.RunQueued {
			return invalid("a new run's status is running or queued, not " + string(c.Status))
		}
		if err := bindings.CheckParent(in.RunID, c.ParentRunID, c.ParentStepKey); err != nil {
			return err
		}
	}
	return nil
}

// CheckCommit returns an *agents.InvalidMessageError for a CommitInput no
// driver accepts: ids as for CheckOpen, a message step index out of
// range (Index may be len(Entries): a message with no step entry) or a message of another tenant, a Finish that is not running,
// suspended, completed or failed, a
// Pending with not exactly one of Create and AsRead, or whose Create or
// AsRead names another run. Entries are checked by the store (or vouched
// for: CommitInput.Trusted). Drivers call it first in Commit.
func CheckCommit(in CommitInput) error {
	if err := firstErr(bindings.CheckID("tenant id", in.TenantID), bindings.CheckID("run id", in.RunID),
		bindings.CheckOptionalID("lease owner", in.Owner)); err != nil {
		return err
	}
	if m := in.Message; m != nil {
		switch {
		case m.Index < 0 || m.Index > len(in.Entries):
			return invalid(fmt.Sprintf("message step index %d of %d entries", m.Index, len(in.Entries)))
		case m.Message.TenantID != in.TenantID:
			return invalid("the message is of another tenant than the run")
		case m.Count < 0 || m.HistoryLimit < 0:
			return invalid("negative message count or history limit")
		}
	}
	switch in.Finish {
	case "", bindings.RunRunning, bindings.RunSuspended, bindings.RunCompleted, bindings.RunFailed:
	default:
		return invalid("unknown run status " + string(in.Finish))
	}
	if p := in.Pending; p != nil {
		switch {
		case (p.Create == nil) == (p.AsRead == nil):
			return invalid("a pending open or lease sets exactly one of Create and AsRead")
		case in.Owner == "":
			return invalid("what is pending is taken for an owner: Owner is empty")
		case p.Create != nil && (p.Create.Snapshot.TenantID != in.TenantID || p.Create.Snapshot.RunID != in.RunID):
			return invalid("the pending run is another run than the commit's")
		case p.AsRead != nil && (p.AsRead.Run.TenantID != in.TenantID || p.AsRead.Run.ID != in.RunID):
			return invalid("the pending lease is of another run than the commit's")
		}
	}
	return nil
}

// Writes reports whether in writes anything but what is pending: entries,
// a message or a finish.
func (in CommitInput) Writes() bool {
	return len(in.Entries) > 0 || in.Message != nil || in.Finish != ""
}

func invalid(reason string) error { return &agents.InvalidMessageError{Reason: reason} }

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// coded returns err, or, when it carries no code, err as a
// *agents.PersistenceError of op.
func coded(err error, op string) error {
	if err == nil || agents.CodeOf(err) != "" {
		return err
	}
	return &agents.PersistenceError{Op: op, Err: err}
}

// journalError is err as the run's *agents.RunJournalUnavailableError,
// unless it is one already, a refused lease or a context's error.
func journalError(runID string, err error) error {
	switch agents.CodeOf(err) {
	case agents.CodeRunJournalUnavailable, agents.CodeRunBusy, agents.CodeTurnAborted:
		return err
	}
	return &agents.RunJournalUnavailableError{RunID: runID, Err: err}
}

// CheckEntries returns an *agents.InvalidMessageError for the first entry
// no store accepts: a key that breaks bindings.CheckStepKey, a node that
// breaks CheckOptionalID, an unknown status, or an Output that is not
// empty and breaks CheckJSON (the checks a Trusted caller vouches for).
func CheckEntries(entries []bindings.JournalEntry) error {
	for i := range entries {
		e := &entries[i]
		switch e.Status {
		case bindings.StepStarted, bindings.StepCompleted, bindings.StepFailed, bindings.StepParked:
		default:
			return invalid("unknown step status " + string(e.Status))
		}
		if err := firstErr(bindings.CheckStepKey(e.Key), bindings.CheckOptionalID("step node", e.Node)); err != nil {
			return err
		}
		if len(e.Output) > 0 {
			if err := bindings.CheckJSON("step output", e.Output); err != nil {
				return err
			}
		}
	}
	return nil
}
