package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// AppendStep implements bindings.RunBinding: AppendSteps with one entry.
func (s *Store) AppendStep(ctx context.Context, in bindings.AppendStepInput) (bindings.JournalEntry, bool, error) {
	if in.TenantID == "" {
		return bindings.JournalEntry{}, false, invalid("tenant id is empty")
	}
	entries, appended, err := s.AppendSteps(ctx, in.TenantID, in.RunID, in.Owner, []bindings.JournalEntry{in.Entry})
	if err != nil {
		return bindings.JournalEntry{}, false, err
	}
	return entries[0], appended[0], nil
}

// AppendSteps appends entries to one run's journal, in order, in one
// round trip and one transaction. Each entry is appended as AppendStep
// would: idempotent per (key, phase), so for an entry whose key and phase
// are stored already (or repeated earlier in entries) the stored entry is
// returned with appended false. owner, when not empty, must hold the run's
// lease, checked once for all entries: otherwise nothing is stored and the
// error is *agents.RunBusyError. A missing run is
// *agents.RunJournalUnavailableError.
//
// AppendSteps is not part of bindings.RunBinding: a driver that has several
// entries to write before its next side effect (the completion of one step
// and the start of the next) can discover it with a type assertion and
// save a round trip per entry.
func (s *Store) AppendSteps(ctx context.Context, tenantID, runID, owner string, entries []bindings.JournalEntry) ([]bindings.JournalEntry, []bool, error) {
	switch {
	case tenantID == "":
		return nil, nil, invalid("tenant id is empty")
	case runID == "":
		return nil, nil, invalid("run id is empty")
	}
	type row struct {
		key, phase, node, status string
		output, stepErr          any
		at                       time.Time
	}
	rows := make([]row, len(entries))
	for i, e := range entries {
		if e.Key == "" {
			return nil, nil, invalid("step key is empty")
		}
		switch e.Status {
		case bindings.StepStarted, bindings.StepCompleted, bindings.StepFailed, bindings.StepParked:
		default:
			return nil, nil, invalid("unknown step status " + string(e.Status))
		}
		output, err := wrapOpt(e.Output)
		if err != nil {
			return nil, nil, err
		}
		var stepErr []byte
		if e.Error != nil {
			if stepErr, err = Wrap(e.Error); err != nil {
				return nil, nil, err
			}
		}
		rows[i] = row{e.Key, e.Status.Phase(), e.Node, string(e.Status), jsonArg(output), jsonArg(stepErr), s.stamp(e.At)}
	}
	if len(entries) == 0 {
		return []bindings.JournalEntry{}, []bool{}, nil
	}
	now := s.stamp(time.Time{})
	var leaseOwner string
	var expires *time.Time
	var exists bool
	out := make([]bindings.JournalEntry, len(entries))
	appended := make([]bool, len(entries))
	found := make([]bool, len(entries))
	err := s.batch(ctx, "append step", tenantID, func(b *pgx.Batch) {
		b.Queue(sqlLockRun, tenantID, runID)
		for _, r := range rows {
			b.Queue(sqlAppendStep, tenantID, runID, r.key, r.phase, owner, r.node, r.status, r.output, r.stepErr, r.at, now)
			b.Queue(sqlGetEntry, tenantID, runID, r.key, r.phase)
		}
	}, func(br pgx.BatchResults) error {
		switch err := br.QueryRow().Scan(&leaseOwner, &expires); err {
		case nil:
			exists = true
		case pgx.ErrNoRows:
		default:
			return err
		}
		for i := range rows {
			tag, err := br.Exec()
			if err != nil {
				return err
			}
			appended[i] = tag.RowsAffected() == 1
			if out[i], found[i], err = collectOne(br, scanEntry); err != nil {
				return err
			}
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, nil, err
	case !exists:
		return nil, nil, &agents.RunJournalUnavailableError{RunID: runID}
	case owner != "" && (leaseOwner != owner || expires == nil || !expires.After(now)):
		return nil, nil, &agents.RunBusyError{RunID: runID, Owner: leaseOwner}
	}
	for i := range found {
		if !found[i] {
			return nil, nil, &agents.PersistenceError{Op: "append step", Err: pgx.ErrNoRows}
		}
	}
	return out, appended, nil
}
