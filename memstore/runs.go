package memstore

import (
	"context"
	"errors"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/runpage"
)

// runRec is a run with its journal.
type runRec struct {
	run     bindings.Run
	journal journal
	// The journal's first slabs (newRunRec), inside the record: one
	// allocation per run instead of three. texts0 holds a pointer and comes
	// first; recs0 and text0 hold none and come last, where the GC does not
	// scan (an object is scanned up to its last pointer).
	texts0 [1][]byte
	recs0  [runSlab]entryRec
	text0  [runText]byte
}

// runSlab and runText size a run's first journal slabs for a turn's
// journal: a turn with one tool call writes 20 entries, 700 bytes of keys
// and nodes and 3.4 KB of outputs (a longer one adds a chunk). runText
// makes a runRec fill its allocation (6144 bytes with the runtime's 8-byte
// type header) to the byte: the GC scans a larger allocation's tail after
// the type as another runRec, and so counts all of it as scan work
// (TestRecordsFillTheirSizeClass).
const (
	runSlab = 20
	runText = 4976
)

// newRunRec returns a record for run, its journal in the record's slabs,
// and the run's ids copied into the front of the first text slab (see
// ownString). The caller keys the record by its own strings: those a
// caller looks the run up with, so that the map's string compare finds
// the same pointer and reads no bytes.
func newRunRec(run bindings.Run) *runRec {
	r := &runRec{run: run}
	text := ownString(ownString(r.text0[:], &r.run.TenantID), &r.run.ID)
	text = ownString(ownString(text, &r.run.FlowID), &r.run.FlowVersion)
	text = ownString(ownString(text, &r.run.ParentRunID), &r.run.ParentStepKey)
	r.texts0[0] = text[:0]
	r.journal.recs, r.journal.text = r.recs0[:0], r.texts0[:]
	return r
}

// scanLimit is the journal length up to which find scans the entries.
const scanLimit = 48

// stepPhase is a step key and one of its phases: the journal's
// idempotency key (a struct, so looking one up builds no string).
type stepPhase struct {
	key, phase string
}

func phaseKey(stepKey string, st bindings.StepStatus) stepPhase {
	return stepPhase{stepKey, st.Phase()}
}

func validStepStatus(st bindings.StepStatus) bool {
	switch st {
	case bindings.StepStarted, bindings.StepCompleted, bindings.StepFailed, bindings.StepParked:
		return true
	}
	return false
}

// heldByOther reports whether someone other than owner holds an unexpired
// lease on r at now.
func heldByOther(r *bindings.Run, owner string, now time.Time) bool {
	return r.LeaseOwner != "" && r.LeaseOwner != owner && now.Before(r.LeaseExpiresAt)
}

// lease gives r to owner for ttl from now (an empty owner holds nothing).
func lease(r *bindings.Run, owner string, ttl time.Duration, now time.Time) {
	r.LeaseOwner = owner
	r.LeaseExpiresAt = time.Time{}
	if owner != "" {
		r.LeaseExpiresAt = now.Add(ttl)
	}
	r.UpdatedAt = now
}

// run finds a run; the caller holds runMu.
func (s *Store) run(tenantID, runID string) (*runRec, error) {
	if r := s.runs[key{tenantID, runID}]; r != nil {
		return r, nil
	}
	return nil, &agents.RunJournalUnavailableError{RunID: runID, Err: errUnknownRun}
}

// lockRun takes runMu and returns the tenant's run by id, unless check
// (the caller's checks of the call, nil when they pass) is an error. On
// success the caller holds runMu and unlocks it; a failed check or an
// unknown run (the error of run) leaves it unlocked.
func (s *Store) lockRun(check error, tenantID, runID string) (*runRec, error) {
	if check != nil {
		return nil, check
	}
	s.runMu.Lock()
	r, err := s.run(tenantID, runID)
	if err != nil {
		s.runMu.Unlock()
		return nil, err
	}
	return r, nil
}

// errUnknownRun is the cause of RunJournalUnavailableError for a run that
// does not exist (for the tenant).
var errUnknownRun = errors.New("no such run")

// StartRun creates a running run leased to in.Owner, or takes the lease of
// an existing run whose lease is free, expired or already in.Owner's.
func (s *Store) StartRun(ctx context.Context, in bindings.StartRunInput) (bindings.Run, error) {
	if err := checkedCall(ctx, bindings.CheckStartRun(in)); err != nil {
		return bindings.Run{}, err
	}
	status, err := bindings.StartStatus(in.Status)
	if err != nil {
		return bindings.Run{}, err
	}
	s.runMu.Lock()
	defer s.runMu.Unlock()
	now := s.now()
	k := key{in.TenantID, in.RunID}
	if r := s.runs[k]; r != nil {
		if heldByOther(&r.run, in.Owner, now) {
			return bindings.Run{}, &agents.RunBusyError{RunID: in.RunID, Owner: r.run.LeaseOwner}
		}
		lease(&r.run, in.Owner, in.LeaseTTL, now)
		return r.out(), nil
	}
	r := newRunRec(bindings.Run{
		TenantID: in.TenantID, ID: in.RunID, FlowID: in.FlowID, FlowVersion: in.FlowVersion,
		Status: status, CreatedAt: now, ParentRunID: in.ParentRunID, ParentStepKey: in.ParentStepKey,
	})
	lease(&r.run, in.Owner, in.LeaseTTL, now)
	s.runs[k] = r
	s.changed(&r.run)
	return r.out(), nil
}

// GetRun returns a run.
func (s *Store) GetRun(ctx context.Context, tenantID, runID string) (bindings.Run, error) {
	if err := lookupCall(ctx, tenantID, "run id", runID); err != nil {
		return bindings.Run{}, err
	}
	s.runMu.RLock()
	defer s.runMu.RUnlock()
	r, err := s.run(tenantID, runID)
	if err != nil {
		return bindings.Run{}, err
	}
	return r.out(), nil
}

// AppendStep appends a journal entry unless one with the same key and
// phase exists, in which case that one is returned with appended=false.
// With in.Owner set, the owner must hold the run's lease, unexpired.
func (s *Store) AppendStep(ctx context.Context, in bindings.AppendStepInput) (bindings.JournalEntry, bool, error) {
	if err := alive(ctx); err != nil {
		return bindings.JournalEntry{}, false, err
	}
	switch {
	case in.TenantID == "":
		return bindings.JournalEntry{}, false, invalid("tenant id is empty")
	case in.Entry.Key == "":
		return bindings.JournalEntry{}, false, invalid("step key is empty")
	case !validStepStatus(in.Entry.Status):
		return bindings.JournalEntry{}, false, invalid("unknown step status " + string(in.Entry.Status))
	}
	if err := firstErr(bindings.CheckID("tenant id", in.TenantID), bindings.CheckOptionalID("run id", in.RunID),
		bindings.CheckOptionalID("lease owner", in.Owner), checkEntry(in.Entry)); err != nil {
		return bindings.JournalEntry{}, false, err
	}
	s.runMu.Lock()
	defer s.runMu.Unlock()
	r, err := s.run(in.TenantID, in.RunID)
	if err != nil {
		return bindings.JournalEntry{}, false, err
	}
	if now := s.now(); in.Owner != "" && !holds(&r.run, in.Owner, now) {
		return bindings.JournalEntry{}, false, runBusy(&r.run, now)
	}
	i, sl, ok := r.journal.find(in.Entry.Key, in.Entry.Status)
	if ok {
		return r.journal.entry(i), false, nil
	}
	e := in.Entry
	if e.At.IsZero() {
		e.At = s.now()
	}
	return r.journal.entry(r.journal.add(&e, sl)), true, nil
}

// ReadJournal returns a run's entries in append order.
func (s *Store) ReadJournal(ctx context.Context, tenantID, runID string) ([]bindings.JournalEntry, error) {
	if err := lookupCall(ctx, tenantID, "run id", runID); err != nil {
		return nil, err
	}
	s.runMu.RLock()
	defer s.runMu.RUnlock()
	r, err := s.run(tenantID, runID)
	if err != nil {
		return nil, err
	}
	return r.journal.entries(), nil
}

// SetRunStatus sets a run's status.
func (s *Store) SetRunStatus(ctx context.Context, tenantID, runID string, status bindings.RunStatus) error {
	if err := alive(ctx); err != nil {
		return err
	}
	if !runpage.ValidStatus(status) {
		return invalid("unknown run status " + string(status))
	}
	r, err := s.lockRun(bindings.CheckLookup(tenantID, "run id", runID), tenantID, runID)
	if err != nil {
		return err
	}
	defer s.runMu.Unlock()
	r.run.Status = status
	r.run.UpdatedAt = s.now()
	if status.Terminal() {
		r.run.LastError = nil // the run ended: nothing is stuck
	}
	s.changed(&r.run)
	return nil
}

// AcquireLease takes or renews the lease on a run for in.TTL.
func (s *Store) AcquireLease(ctx context.Context, in bindings.LeaseInput) (bindings.Run, error) {
	if err := alive(ctx); err != nil {
		return bindings.Run{}, err
	}
	if in.Owner == "" {
		return bindings.Run{}, invalid("lease owner is empty")
	}
	r, err := s.lockRun(firstErr(bindings.CheckLookup(in.TenantID, "run id", in.RunID), bindings.CheckID("lease owner", in.Owner)), in.TenantID, in.RunID)
	if err != nil {
		return bindings.Run{}, err
	}
	defer s.runMu.Unlock()
	now := s.now()
	if heldByOther(&r.run, in.Owner, now) {
		return bindings.Run{}, &agents.RunBusyError{RunID: in.RunID, Owner: r.run.LeaseOwner}
	}
	lease(&r.run, in.Owner, in.TTL, now)
	return r.out(), nil
}

// out is the run as a caller gets it: its LastError a copy of the
// store's, nil once the run ended (the end clears it).
func (r *runRec) out() bindings.Run {
	run := r.run
	if e := run.LastError; e != nil {
		run.LastError = nil
		if !run.Status.Terminal() {
			c := *e
			run.LastError = &c
		}
	}
	return run
}

var _ bindings.RunErrorRecorder = (*Store)(nil)

// RecordRunError implements bindings.RunErrorRecorder.
func (s *Store) RecordRunError(ctx context.Context, in bindings.RecordRunErrorInput) (bindings.RunError, error) {
	in, err := bindings.CheckRunError(in)
	r, err := s.lockRun(checkedCall(ctx, err), in.TenantID, in.RunID)
	if err != nil {
		return bindings.RunError{}, err
	}
	defer s.runMu.Unlock()
	if r.run.Status.Terminal() {
		return bindings.RunError{}, nil
	}
	e := bindings.RunError{Code: in.Code, Message: in.Message, At: s.now(), Attempts: 1}
	if prev := r.run.LastError; prev != nil {
		e.Attempts = prev.Attempts + 1
	}
	// A new value each time: runs handed out before share none of it.
	r.run.LastError = &e
	return e, nil
}

// ReleaseLease frees the lease when owner holds it; otherwise it does
// nothing.
func (s *Store) ReleaseLease(ctx context.Context, tenantID, runID, owner string) error {
	r, err := s.lockRun(firstErr(lookupCall(ctx, tenantID, "run id", runID), bindings.CheckOptionalID("lease owner", owner)), tenantID, runID)
	if err != nil {
		return err
	}
	defer s.runMu.Unlock()
	if owner != "" && r.run.LeaseOwner == owner {
		lease(&r.run, "", 0, s.now())
		s.changed(&r.run)
	}
	return nil
}

// checkEntry checks a journal entry's key, node and output.
func checkEntry(e bindings.JournalEntry) error {
	return firstErr(bindings.CheckStepKey(e.Key), bindings.CheckOptionalID("step node", e.Node),
		bindings.CheckJSON("step output", e.Output))
}
