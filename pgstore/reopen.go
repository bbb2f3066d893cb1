package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/storeio"
)

// sqlReopenLease is sqlAcquireLease taken only when the run has a
// snapshot, so that a run id without one leases nothing.
const sqlReopenLease = `UPDATE agent_runs
	SET lease_owner = $3, lease_expires_at = $4, updated_at = $5
	WHERE tenant_id = $1 AND id = $2 AND ` + leaseFree + `
	  AND EXISTS (SELECT 1 FROM agent_run_snapshots s WHERE s.tenant_id = $1 AND s.run_id = $2)
	RETURNING ` + runCols

// reopenRun is ReopenRun, with the statements of extra (when set) after
// its own in the same round trip and transaction (see resumeRun).
func (s *Store) reopenRun(ctx context.Context, in storeio.ReopenRunInput, extra *batchExtra) (storeio.ReopenRunResult, error) {
	if err := bindings.CheckLookup(in.TenantID, "run id", in.RunID); err != nil {
		return storeio.ReopenRunResult{}, err
	}
	if !in.Held {
		if in.Owner == "" {
			return storeio.ReopenRunResult{}, invalid("lease owner is empty")
		}
		if err := bindings.CheckID("lease owner", in.Owner); err != nil {
			return storeio.ReopenRunResult{}, err
		}
	}
	now := s.stamp(time.Time{})
	exp := now.Add(in.TTL).Truncate(time.Microsecond)
	var (
		out                  storeio.ReopenRunResult
		cur                  bindings.Run
		found, taken, exists bool
	)
	err := s.batch(ctx, "reopen run", in.TenantID, func(b *pgx.Batch) {
		b.Queue(sqlReadSnapshot, in.TenantID, in.RunID)
		if !in.Held {
			b.Queue(sqlReopenLease, in.TenantID, in.RunID, in.Owner, exp, now)
		}
		b.Queue(sqlGetRun, in.TenantID, in.RunID)
		b.Queue(sqlReadJournal, in.TenantID, in.RunID)
		extra.queue(b)
	}, func(br pgx.BatchResults) error {
		if err := collectOneInto(br, &out.Snapshot, &found, scanSnapshot); err != nil {
			return err
		}
		if !in.Held {
			if err := collectOneInto(br, &out.Run, &taken, scanRun); err != nil {
				return err
			}
		}
		if err := collectOneInto(br, &cur, &exists, scanRun); err != nil {
			return err
		}
		return extra.readAfterJournal(br, &out.Journal)
	})
	if err := runReadErr(err, found, exists, in.RunID); err != nil {
		return storeio.ReopenRunResult{}, err
	}
	if !in.Held && !taken {
		return storeio.ReopenRunResult{}, &agents.RunBusyError{RunID: in.RunID, Owner: cur.LeaseOwner}
	}
	if out.Journal == nil {
		out.Journal = []bindings.JournalEntry{}
	}
	return out, nil
}

// runReadErr is the error of a batch that read a run's snapshot (found)
// and the run (exists): the batch's err, else
// *agents.RunSnapshotMissingError, else
// *agents.RunJournalUnavailableError; nil when both were read.
func runReadErr(err error, found, exists bool, runID string) error {
	switch {
	case err != nil:
		return err
	case !found:
		return &agents.RunSnapshotMissingError{RunID: runID}
	case !exists:
		return &agents.RunJournalUnavailableError{RunID: runID}
	}
	return nil
}
