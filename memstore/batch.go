package memstore

import (
	"context"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// The optional journal capabilities memstore implements.
var (
	_ bindings.StepBatcher = (*Store)(nil)
	_ bindings.RunFinisher = (*Store)(nil)
	_ bindings.RunOpener   = (*Store)(nil)

	_ bindings.StepMessageAppender = (*Store)(nil)
	_ bindings.TrustedJournal      = (*Store)(nil)
	_ bindings.OutputCopier        = trustedJournal{}
)

// TrustedJournal implements bindings.TrustedJournal: the returned batcher
// (also a RunFinisher and a StepMessageAppender) skips the checks its
// caller vouches for — of the ids, every entry's key, node, status and
// output, and the message's ids and JSON — unless Options.CheckTrusted is
// set. Everything else is checked as always. It keeps copies of the
// entries' outputs, as the Store's own methods do (a bindings.OutputCopier:
// the caller may write over its outputs once a call has returned), and
// reads a journal without copying it (a bindings.SharedJournalReader:
// ReadJournalShared). The binding it returns is s.
func (s *Store) TrustedJournal() (bindings.StepBatcher, bindings.RunBinding) {
	return trustedJournal{s}, s
}

// trustedJournal is the Store's journal for a caller that vouches for
// what it writes (bindings.TrustedJournal).
type trustedJournal struct{ s *Store }

var (
	_ bindings.RunFinisher         = trustedJournal{}
	_ bindings.StepMessageAppender = trustedJournal{}
)

// AppendSteps is Store.AppendSteps without the vouched checks. Its
// results share memory with its input (see
// bindings.TrustedJournal): the entries returned are in.Entries, each
// updated to what the store kept; the flags are the call's own.
func (t trustedJournal) AppendSteps(ctx context.Context, in bindings.AppendStepsInput) ([]bindings.JournalEntry, []bool, error) {
	return t.s.appendSteps(ctx, in, "", !t.s.checkTrusted)
}

// CopiesOutputs implements bindings.OutputCopier: the store keeps copies
// of the outputs it is given, never the caller's bytes.
func (t trustedJournal) CopiesOutputs() bool { return true }

// FinishRun is Store.FinishRun without the vouched checks.
func (t trustedJournal) FinishRun(ctx context.Context, in bindings.FinishRunInput) ([]bindings.JournalEntry, []bool, error) {
	return t.s.finishRun(ctx, in, !t.s.checkTrusted)
}

// AppendStepsAndMessage is Store.AppendStepsAndMessage without the vouched
// checks.
func (t trustedJournal) AppendStepsAndMessage(ctx context.Context, steps bindings.AppendStepsInput, msg bindings.AppendMessageInput) ([]bindings.JournalEntry, []bool, bindings.ConversationMessage, error) {
	return t.s.appendStepsAndMessage(ctx, steps, msg, !t.s.checkTrusted)
}

// AppendSteps implements bindings.StepBatcher: each entry is appended as
// AppendStep would, in order, under one lock; the owner is checked once
// and an invalid entry or a refused owner stores none of them. A returned
// entry that was appended shares its Output bytes with the input entry
// (never with the store); one that was stored already is a copy.
func (s *Store) AppendSteps(ctx context.Context, in bindings.AppendStepsInput) ([]bindings.JournalEntry, []bool, error) {
	return s.appendSteps(ctx, in, "", false)
}

// FinishRun implements bindings.RunFinisher: the entries, then the status,
// then the release of the owner's lease, under one lock, all or nothing.
func (s *Store) FinishRun(ctx context.Context, in bindings.FinishRunInput) ([]bindings.JournalEntry, []bool, error) {
	return s.finishRun(ctx, in, false)
}

// finishRun is FinishRun; trusted skips the checks the caller vouches for
// (bindings.TrustedJournal).
func (s *Store) finishRun(ctx context.Context, in bindings.FinishRunInput, trusted bool) ([]bindings.JournalEntry, []bool, error) {
	if !validRunStatus(in.Status) {
		return nil, nil, invalid("unknown run status " + string(in.Status))
	}
	return s.appendSteps(ctx, bindings.AppendStepsInput{TenantID: in.TenantID, RunID: in.RunID, Owner: in.Owner, Entries: in.Entries}, in.Status, trusted)
}

// appendSteps appends in.Entries and, when status is set, sets the run's
// status and releases in.Owner's lease. trusted skips the checks of the
// ids and entries that a bindings.TrustedJournal caller vouches for.
func (s *Store) appendSteps(ctx context.Context, in bindings.AppendStepsInput, status bindings.RunStatus, trusted bool) ([]bindings.JournalEntry, []bool, error) {
	if err := alive(ctx); err != nil {
		return nil, nil, err
	}
	if !trusted {
		if err := checkSteps(in); err != nil {
			return nil, nil, err
		}
	}
	s.runMu.Lock()
	defer s.runMu.Unlock()
	r, err := s.run(in.TenantID, in.RunID)
	if err != nil {
		return nil, nil, err
	}
	if err := s.checkShared(r); err != nil {
		return nil, nil, err
	}
	now := s.now()
	if in.Owner != "" && !holds(&r.run, in.Owner, now) {
		return nil, nil, runBusy(&r.run, now)
	}
	out, appended := s.appendLocked(r, in, status, trusted, now)
	return out, appended, nil
}

// appendLocked is appendSteps once the run is found and its owner
// checked, under runMu, at now: it cannot fail.
func (s *Store) appendLocked(r *runRec, in bindings.AppendStepsInput, status bindings.RunStatus, trusted bool, now time.Time) ([]bindings.JournalEntry, []bool) {
	out, appended := in.Entries, make([]bool, len(in.Entries))
	if !trusted {
		out = make([]bindings.JournalEntry, len(in.Entries))
	}
	for i := range in.Entries {
		entry := &in.Entries[i]
		j, sl, ok := r.journal.find(entry.Key, entry.Status)
		if ok {
			out[i], appended[i] = r.journal.entry(j), false
			continue
		}
		// The entry returned is the caller's own with its Seq and At (its
		// Output shared with the input, never with the store): for a
		// trusting caller in.Entries[i] itself, updated in place.
		if !trusted {
			out[i] = *entry
		}
		ret := &out[i]
		if ret.Error != nil {
			ret.Error = storedStepError(ret.Error)
		}
		if ret.At.IsZero() {
			ret.At = now
		}
		ret.Seq = int64(r.journal.add(ret, sl) + 1)
		appended[i] = true
	}
	if status != "" {
		r.run.Status = status
		r.run.UpdatedAt = now
		if in.Owner != "" && r.run.LeaseOwner == in.Owner {
			lease(&r.run, "", 0, now)
		}
		s.changed(&r.run)
	}
	return out, appended
}

// allAppended returns n true flags, the call's own: the flags a call
// returns are never shared with another call (a package-wide array handed
// out read-only was written by every trusted append, a data race between
// concurrent turns on one store).
func allAppended(n int) []bool {
	a := make([]bool, n)
	for i := range a {
		a[i] = true
	}
	return a
}

// checkSteps checks the ids and entries of an AppendSteps call.
func checkSteps(in bindings.AppendStepsInput) error {
	if in.TenantID == "" {
		return invalid("tenant id is empty")
	}
	if err := firstErr(bindings.CheckID("tenant id", in.TenantID), bindings.CheckOptionalID("run id", in.RunID),
		bindings.CheckOptionalID("lease owner", in.Owner)); err != nil {
		return err
	}
	for _, e := range in.Entries {
		switch {
		case e.Key == "":
			return invalid("step key is empty")
		case !validStepStatus(e.Status):
			return invalid("unknown step status " + string(e.Status))
		}
		if err := checkEntry(e); err != nil {
			return err
		}
	}
	return nil
}

// OpenRun implements bindings.RunOpener: Write, then StartRun (taking the
// run lock once, to tell whether it created the run), then the reads of
// the stored snapshot and of the journal.
func (s *Store) OpenRun(ctx context.Context, in bindings.OpenRunInput) (bindings.OpenRunResult, error) {
	st := in.Start
	if in.Snapshot.TenantID != st.TenantID || in.Snapshot.RunID != st.RunID {
		return bindings.OpenRunResult{}, invalid("the snapshot and the run name different runs")
	}
	if st.RunID != "" {
		// Write checks the snapshot; a start it would refuse stores no
		// snapshot either.
		if err := checkStart(st); err != nil {
			return bindings.OpenRunResult{}, err
		}
	}
	wrote, stored, err := s.write(ctx, in.Snapshot)
	if err != nil {
		return bindings.OpenRunResult{}, err
	}
	if st.RunID == "" {
		return bindings.OpenRunResult{}, invalid("run id is empty")
	}
	status, err := newRunStatus(st.Status)
	if err != nil {
		return bindings.OpenRunResult{}, err
	}
	var out bindings.OpenRunResult
	s.runMu.Lock()
	now := s.now()
	k := key{st.TenantID, st.RunID}
	r := s.runs[k]
	switch {
	case r == nil:
		r = newRunRec(bindings.Run{
			TenantID: st.TenantID, ID: st.RunID, FlowID: st.FlowID, FlowVersion: st.FlowVersion,
			Status: status, CreatedAt: now, ParentRunID: st.ParentRunID, ParentStepKey: st.ParentStepKey,
		})
		s.runs[k] = r
		out.Created = true
	case heldByOther(&r.run, st.Owner, now):
		owner := r.run.LeaseOwner
		s.runMu.Unlock()
		return bindings.OpenRunResult{}, &agents.RunBusyError{RunID: st.RunID, Owner: owner}
	}
	lease(&r.run, st.Owner, st.LeaseTTL, now)
	if out.Created {
		s.changed(&r.run)
	}
	out.Run = r.out()
	out.Journal = r.journal.entries()
	s.runMu.Unlock()
	if stored {
		// What this call stored needs no reading back (its input is the
		// caller's own bytes, as given).
		out.Snapshot = wrote
		return out, nil
	}
	snap, err := s.Read(ctx, st.TenantID, st.RunID)
	if err != nil {
		return bindings.OpenRunResult{}, err
	}
	out.Snapshot = snap
	return out, nil
}

// AppendStepsAndMessage implements bindings.StepMessageAppender:
// AppendSteps, then, when it stored the entries, AppendMessage.
func (s *Store) AppendStepsAndMessage(ctx context.Context, steps bindings.AppendStepsInput, msg bindings.AppendMessageInput) ([]bindings.JournalEntry, []bool, bindings.ConversationMessage, error) {
	return s.appendStepsAndMessage(ctx, steps, msg, false)
}

// appendStepsAndMessage is AppendStepsAndMessage; trusted skips the checks
// the caller vouches for (bindings.TrustedJournal).
func (s *Store) appendStepsAndMessage(ctx context.Context, steps bindings.AppendStepsInput, msg bindings.AppendMessageInput, trusted bool) ([]bindings.JournalEntry, []bool, bindings.ConversationMessage, error) {
	if msg.TenantID != steps.TenantID {
		return nil, nil, bindings.ConversationMessage{}, invalid("the entries and the message are of different tenants")
	}
	// A message that AppendMessage would refuse stores no entry either.
	switch {
	case msg.ConversationID == "":
		return nil, nil, bindings.ConversationMessage{}, invalid("conversation id is empty")
	case !msg.Role.Valid():
		return nil, nil, bindings.ConversationMessage{}, invalid("unknown role " + string(msg.Role))
	case msg.Content == "" && len(msg.ToolCalls) == 0:
		return nil, nil, bindings.ConversationMessage{}, invalid("message has neither content nor tool calls")
	}
	if !trusted {
		if err := checkMessage(msg); err != nil {
			return nil, nil, bindings.ConversationMessage{}, err
		}
	}
	entries, appended, err := s.appendSteps(ctx, steps, "", trusted)
	if err != nil {
		return nil, nil, bindings.ConversationMessage{}, err
	}
	m, err := s.appendMessage(ctx, msg, trusted)
	return entries, appended, m, err
}
