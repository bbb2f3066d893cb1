package memstore

import (
	"context"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/storeio"
)

// appendLocked appends the entries of in to r (each idempotent per key and
// phase) once the run is found and its owner checked, under runMu, at now:
// it cannot fail. trusted (journal.CommitInput.Trusted) skips the checks
// the caller vouches for and updates in.Entries in place.
func (s *Store) appendLocked(r *runRec, in storeio.AppendStepsInput, status bindings.RunStatus, trusted bool, now time.Time) ([]bindings.JournalEntry, []bool) {
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
func checkSteps(in storeio.AppendStepsInput) error {
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

// openRun opens a run for the driver (Open with Create and LeaseNow): Write, then StartRun (taking the
// run lock once, to tell whether it created the run), then the reads of
// the stored snapshot and of the journal.
func (s *Store) openRun(ctx context.Context, in storeio.OpenRunInput) (storeio.OpenRunResult, error) {
	st := in.Start
	if in.Snapshot.TenantID != st.TenantID || in.Snapshot.RunID != st.RunID {
		return storeio.OpenRunResult{}, invalid("the snapshot and the run name different runs")
	}
	if st.RunID != "" {
		// Write checks the snapshot; a start it would refuse stores no
		// snapshot either.
		if err := bindings.CheckStartRun(st); err != nil {
			return storeio.OpenRunResult{}, err
		}
	}
	wrote, stored, err := s.write(ctx, in.Snapshot)
	if err != nil {
		return storeio.OpenRunResult{}, err
	}
	if st.RunID == "" {
		return storeio.OpenRunResult{}, invalid("run id is empty")
	}
	status, err := bindings.StartStatus(st.Status)
	if err != nil {
		return storeio.OpenRunResult{}, err
	}
	var out storeio.OpenRunResult
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
		return storeio.OpenRunResult{}, &agents.RunBusyError{RunID: st.RunID, Owner: owner}
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
		return storeio.OpenRunResult{}, err
	}
	out.Snapshot = snap
	return out, nil
}
