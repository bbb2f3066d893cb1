package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/runpage"
)

const runCols = `tenant_id, id, flow_id, flow_version, status, lease_owner, lease_expires_at, created_at, updated_at, not_before, parent_run_id, parent_step_key`

const entryCols = `seq, key, node, status, output, error, at`

// leaseFree is true on an agent_runs row whose lease $owner may take at
// time $now: free, expired, or already held by $owner.
const leaseFree = `(agent_runs.lease_owner = '' OR agent_runs.lease_owner = $3
	OR agent_runs.lease_expires_at IS NULL OR agent_runs.lease_expires_at <= $5)`

// sqlStartRun creates the run, or takes the lease of an existing run whose
// lease is free. It returns no row when another owner holds the lease.
const sqlStartRun = `INSERT INTO agent_runs
	(tenant_id, id, flow_id, flow_version, status, lease_owner, lease_expires_at, created_at, updated_at, parent_run_id, parent_step_key)
	VALUES ($1, $2, $6, $7, $8, $3, $4, $5, $5, $9, $10)
	ON CONFLICT (tenant_id, id) DO UPDATE
	SET lease_owner = EXCLUDED.lease_owner, lease_expires_at = EXCLUDED.lease_expires_at, updated_at = EXCLUDED.updated_at
	WHERE ` + leaseFree + `
	RETURNING ` + runCols

const sqlGetRun = `SELECT ` + runCols + ` FROM agent_runs WHERE tenant_id = $1 AND id = $2`

// runErrorCols are the columns of a run's failed drives (the baseline migration),
// read after runCols by scanRunWithError.
const runErrorCols = `last_error_code, last_error_message, last_error_at, drive_attempts`

// sqlGetRunWithError is sqlGetRun with the run's failed drives.
const sqlGetRunWithError = `SELECT ` + runCols + `, ` + runErrorCols + ` FROM agent_runs WHERE tenant_id = $1 AND id = $2`

// sqlRecordRunError records one failed drive of a run that did not end
// and returns its count; no row for an ended (or missing) run.
const sqlRecordRunError = `UPDATE agent_runs
	SET last_error_code = $3, last_error_message = $4, last_error_at = $5, drive_attempts = drive_attempts + 1
	WHERE tenant_id = $1 AND id = $2 AND status NOT IN ('completed', 'failed')
	RETURNING drive_attempts`

// sqlAcquireLease is a conditional UPDATE: concurrent acquirers queue on
// the row lock and each re-checks leaseFree against the row its
// predecessor committed, so exactly one of them takes a free lease.
const sqlAcquireLease = `UPDATE agent_runs
	SET lease_owner = $3, lease_expires_at = $4, updated_at = $5
	WHERE tenant_id = $1 AND id = $2 AND ` + leaseFree + `
	RETURNING ` + runCols

const sqlReleaseLease = `UPDATE agent_runs
	SET lease_owner = '', lease_expires_at = NULL, updated_at = $4
	WHERE tenant_id = $1 AND id = $2 AND lease_owner = $3 AND $3 <> ''`

// startOf is a run start's status (bindings.StartStatus), now, and when
// the lease it takes expires.
func (s *Store) startOf(in bindings.StartRunInput) (status bindings.RunStatus, now, exp time.Time, err error) {
	if status, err = bindings.StartStatus(in.Status); err != nil {
		return "", time.Time{}, time.Time{}, err
	}
	now = s.stamp(time.Time{})
	return status, now, now.Add(in.LeaseTTL).Truncate(time.Microsecond), nil
}

const sqlRunExists = `SELECT EXISTS (SELECT 1 FROM agent_runs WHERE tenant_id = $1 AND id = $2)`

const sqlSetRunStatus = `UPDATE agent_runs SET status = $3, updated_at = $4 WHERE tenant_id = $1 AND id = $2`

const sqlReadJournal = `SELECT ` + entryCols + ` FROM agent_run_journal
	WHERE tenant_id = $1 AND run_id = $2 ORDER BY seq`

// StartRun implements bindings.RunBinding.
func (s *Store) StartRun(ctx context.Context, in bindings.StartRunInput) (bindings.Run, error) {
	if err := bindings.CheckStartRun(in); err != nil {
		return bindings.Run{}, err
	}
	status, now, exp, err := s.startOf(in)
	if err != nil {
		return bindings.Run{}, err
	}
	return s.takeRun(ctx, "start run", in.TenantID, in.RunID,
		stmt{sqlStartRun, []any{in.TenantID, in.RunID, in.Owner, exp, now, in.FlowID, in.FlowVersion, string(status), in.ParentRunID, in.ParentStepKey}},
		&agents.PersistenceError{Op: "start run", Err: pgx.ErrNoRows})
}

// GetRun implements bindings.RunBinding.
func (s *Store) GetRun(ctx context.Context, tenantID, runID string) (bindings.Run, error) {
	return getByID(ctx, s, "get run", tenantID, "run id", runID, nil, sqlGetRunWithError, scanRunWithError,
		func() error { return &agents.RunJournalUnavailableError{RunID: runID} })
}

// ReadJournal implements bindings.RunBinding.
func (s *Store) ReadJournal(ctx context.Context, tenantID, runID string) ([]bindings.JournalEntry, error) {
	if err := bindings.CheckLookup(tenantID, "run id", runID); err != nil {
		return nil, err
	}
	var exists bool
	var entries []bindings.JournalEntry
	err := s.batch(ctx, "read journal", tenantID, func(b *pgx.Batch) {
		b.Queue(sqlRunExists, tenantID, runID)
		b.Queue(sqlReadJournal, tenantID, runID)
	}, func(br pgx.BatchResults) error {
		if err := br.QueryRow().Scan(&exists); err != nil {
			return err
		}
		var err error
		entries, err = collectJournal(br)
		return err
	})
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, &agents.RunJournalUnavailableError{RunID: runID}
	}
	if entries == nil {
		entries = []bindings.JournalEntry{}
	}
	return entries, nil
}

// SetRunStatus implements bindings.RunBinding.
func (s *Store) SetRunStatus(ctx context.Context, tenantID, runID string, status bindings.RunStatus) error {
	if err := bindings.CheckLookup(tenantID, "run id", runID); err != nil {
		return err
	}
	if !runpage.ValidStatus(status) {
		return invalid("unknown run status " + string(status))
	}
	n, err := s.exec(ctx, "set run status", tenantID, sqlSetRunStatus, tenantID, runID, string(status), s.stamp(time.Time{}))
	if err != nil {
		return err
	}
	if n == 0 {
		return &agents.RunJournalUnavailableError{RunID: runID}
	}
	return nil
}

// AcquireLease implements bindings.RunBinding with a conditional UPDATE.
func (s *Store) AcquireLease(ctx context.Context, in bindings.LeaseInput) (bindings.Run, error) {
	switch {
	case in.TenantID == "":
		return bindings.Run{}, invalid("tenant id is empty")
	case in.Owner == "":
		return bindings.Run{}, invalid("lease owner is empty")
	}
	if err := firstErr(bindings.CheckLookup(in.TenantID, "run id", in.RunID), bindings.CheckID("lease owner", in.Owner)); err != nil {
		return bindings.Run{}, err
	}
	now := s.stamp(time.Time{})
	exp := now.Add(in.TTL).Truncate(time.Microsecond)
	return s.takeRun(ctx, "acquire lease", in.TenantID, in.RunID,
		stmt{sqlAcquireLease, []any{in.TenantID, in.RunID, in.Owner, exp, now}},
		&agents.RunJournalUnavailableError{RunID: in.RunID})
}

// takeRun runs take, a conditional statement that returns the run's row
// when it got the lease, and reads the run in the same batch: the run when
// taken, *agents.RunBusyError naming the holder when the run exists but the
// lease is held, and missing when there is no such run.
func (s *Store) takeRun(ctx context.Context, op, tenantID, runID string, take stmt, missing error) (bindings.Run, error) {
	var run, cur bindings.Run
	var taken, exists bool
	err := s.batch(ctx, op, tenantID, func(b *pgx.Batch) {
		b.Queue(take.sql, take.args...)
		b.Queue(sqlGetRun, tenantID, runID)
	}, func(br pgx.BatchResults) error {
		if err := collectOneInto(br, &run, &taken, scanRun); err != nil {
			return err
		}
		return collectOneInto(br, &cur, &exists, scanRun)
	})
	switch {
	case err != nil:
		return bindings.Run{}, err
	case taken:
		return run, nil
	case exists:
		return bindings.Run{}, &agents.RunBusyError{RunID: runID, Owner: cur.LeaseOwner}
	default:
		return bindings.Run{}, missing
	}
}

// ReleaseLease implements bindings.RunBinding.
func (s *Store) ReleaseLease(ctx context.Context, tenantID, runID, owner string) error {
	if err := firstErr(bindings.CheckLookup(tenantID, "run id", runID), bindings.CheckOptionalID("lease owner", owner)); err != nil {
		return err
	}
	var exists bool
	err := s.batch(ctx, "release lease", tenantID, func(b *pgx.Batch) {
		b.Queue(sqlReleaseLease, tenantID, runID, owner, s.stamp(time.Time{}))
		b.Queue(sqlRunExists, tenantID, runID)
	}, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		return br.QueryRow().Scan(&exists)
	})
	if err != nil {
		return err
	}
	if !exists {
		return &agents.RunJournalUnavailableError{RunID: runID}
	}
	return nil
}

func scanRun(row pgx.CollectableRow) (bindings.Run, error) {
	return scanRunAnd(row)
}

// scanRunAnd is scanRun of a row whose run columns are followed by more
// columns, scanned into more.
func scanRunAnd(row pgx.CollectableRow, more ...any) (bindings.Run, error) {
	var r bindings.Run
	var status string
	var expires, notBefore *time.Time
	dst := append([]any{&r.TenantID, &r.ID, &r.FlowID, &r.FlowVersion, &status, &r.LeaseOwner, &expires, &r.CreatedAt, &r.UpdatedAt, &notBefore,
		&r.ParentRunID, &r.ParentStepKey}, more...)
	if err := row.Scan(dst...); err != nil {
		return r, err
	}
	r.Status = bindings.RunStatus(status)
	if expires != nil && r.LeaseOwner != "" {
		r.LeaseExpiresAt = expires.UTC()
	}
	r.CreatedAt, r.UpdatedAt = utc(r.CreatedAt), utc(r.UpdatedAt)
	if notBefore != nil {
		r.NotBefore = notBefore.UTC()
	}
	return r, nil
}

// scanRunWithError is scanRun of a row of runCols and runErrorCols: the
// run with its LastError while it has not ended.
func scanRunWithError(row pgx.CollectableRow) (bindings.Run, error) {
	var code, msg *string
	var at *time.Time
	var attempts int32
	r, err := scanRunAnd(row, &code, &msg, &at, &attempts)
	if err != nil || code == nil || r.Status.Terminal() {
		return r, err
	}
	e := &bindings.RunError{Code: *code, Attempts: int(attempts)}
	if msg != nil {
		e.Message = decodeText(*msg)
	}
	if at != nil {
		e.At = at.UTC()
	}
	r.LastError = e
	return r, nil
}

var _ bindings.RunErrorRecorder = (*Store)(nil)

// RecordRunError implements bindings.RunErrorRecorder in one round trip:
// the failure is recorded on the run's row, its drive count incremented
// there (so that it holds across every worker of the database).
func (s *Store) RecordRunError(ctx context.Context, in bindings.RecordRunErrorInput) (bindings.RunError, error) {
	in, err := bindings.CheckRunError(in)
	if err != nil {
		return bindings.RunError{}, err
	}
	at := s.stamp(time.Time{})
	var attempts int32
	recorded, exists := false, false
	err = s.batch(ctx, "record run error", in.TenantID, func(b *pgx.Batch) {
		b.Queue(sqlRecordRunError, in.TenantID, in.RunID, in.Code, encodeText(in.Message), at)
		b.Queue(sqlRunExists, in.TenantID, in.RunID)
	}, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		for rows.Next() {
			if err := rows.Scan(&attempts); err != nil {
				rows.Close()
				return err
			}
			recorded = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		return br.QueryRow().Scan(&exists)
	})
	switch {
	case err != nil:
		return bindings.RunError{}, err
	case !exists:
		return bindings.RunError{}, &agents.RunJournalUnavailableError{RunID: in.RunID}
	case !recorded:
		return bindings.RunError{}, nil // the run ended
	}
	return bindings.RunError{Code: in.Code, Message: in.Message, At: at, Attempts: int(attempts)}, nil
}

// collectJournal reads the next result of br, a sqlReadJournal, as
// journal entries.
func collectJournal(br pgx.BatchResults) ([]bindings.JournalEntry, error) {
	var es []bindings.JournalEntry
	err := collectInto(br, &es, scanEntry)
	return es, err
}

func scanEntry(row pgx.CollectableRow) (bindings.JournalEntry, error) {
	var e bindings.JournalEntry
	var status string
	var output, stepErr []byte
	if err := row.Scan(&e.Seq, &e.Key, &e.Node, &status, &output, &stepErr, &e.At); err != nil {
		return e, err
	}
	e.Status = bindings.StepStatus(status)
	e.At = utc(e.At)
	return e, unwrapPayloads(&e, output, stepErr)
}

// sqlSetParent sets the parent of the run the next statement of the
// transaction creates: the functions that create runs (kindgi_open_run,
// kindgi_open_new_run) take parent_run_id and parent_step_key from these
// settings through the columns' defaults. Sent in front of them for a
// child run only.
const sqlSetParent = `SELECT set_config('kindgi.parent_run_id', $1, true), set_config('kindgi.parent_step_key', $2, true)`

// sqlGetParent reads a run's parent.
const sqlGetParent = `SELECT parent_run_id, parent_step_key FROM agent_runs WHERE tenant_id = $1 AND id = $2`
