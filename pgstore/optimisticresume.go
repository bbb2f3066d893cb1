package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/storeio"
)

// sqlGetRunAsRead is sqlGetRun with the run's journal version (last_seq)
// and its raw lease expiry.
const sqlGetRunAsRead = `SELECT ` + runCols + `, last_seq FROM agent_runs WHERE tenant_id = $1 AND id = $2`

// sqlLeaseAsRead is kindgi_lease_as_read (the baseline migration): the lease taken
// for $3 until $4 only if the run is as read (status $6, lease owner $7,
// lease expiry $8 when $7 is not empty, last_seq $9) and its lease is free
// for $3 at $5; else the call's transaction fails with SQLSTATE
// codeRunChanged.
const sqlLeaseAsRead = `SELECT kindgi_lease_as_read($1, $2, $3, $4, $5, $6, $7, $8, $9)`

// codeRunChanged is the SQLSTATE kindgi_lease_as_read raises.
const codeRunChanged = "KG003"

// readResumeRun serves the Driver: the snapshot,
// the run with its journal version, the journal and the approvals in one
// read-only round trip (its transaction's commit flushes nothing). The run
// is read before the journal: an append between the two statements moves
// last_seq past the version returned, so the lease as read fails.
func (s *Store) readResumeRun(ctx context.Context, in storeio.ReopenRunInput) (storeio.ReadResumeRunResult, error) {
	if err := bindings.CheckLookup(in.TenantID, "run id", in.RunID); err != nil {
		return storeio.ReadResumeRunResult{}, err
	}
	switch {
	case in.Held:
		return storeio.ReadResumeRunResult{}, invalid("a held lease is resumed with ResumeRun")
	case in.Owner == "":
		return storeio.ReadResumeRunResult{}, invalid("lease owner is empty")
	}
	if err := bindings.CheckID("lease owner", in.Owner); err != nil {
		return storeio.ReadResumeRunResult{}, err
	}
	now := s.stamp(time.Time{})
	var (
		out           storeio.ReadResumeRunResult
		found, exists bool
	)
	err := s.batch(ctx, "read resume run", in.TenantID, func(b *pgx.Batch) {
		b.Queue(sqlReadSnapshot, in.TenantID, in.RunID)
		b.Queue(sqlGetRunAsRead, in.TenantID, in.RunID)
		b.Queue(sqlReadJournal, in.TenantID, in.RunID)
		b.Queue(sqlListApprovals, in.TenantID, in.RunID)
	}, func(br pgx.BatchResults) error {
		var err error
		if out.Snapshot, found, err = collectOne(br, scanSnapshot); err != nil {
			return err
		}
		out.Run, exists, err = collectOne(br, func(row pgx.CollectableRow) (bindings.Run, error) {
			return scanRunAnd(row, &out.JournalVersion)
		})
		if err != nil {
			return err
		}
		if out.Journal, err = collectJournal(br); err != nil {
			return err
		}
		return collectInto(br, &out.Approvals, scanApproval)
	})
	if err := runReadErr(err, found, exists, in.RunID); err != nil {
		return storeio.ReadResumeRunResult{}, err
	}
	if out.Run.LeaseOwner != "" && out.Run.LeaseOwner != in.Owner && out.Run.LeaseExpiresAt.After(now) {
		return storeio.ReadResumeRunResult{}, &agents.RunBusyError{RunID: in.RunID, Owner: out.Run.LeaseOwner}
	}
	if out.Journal == nil {
		out.Journal = []bindings.JournalEntry{}
	}
	for i := range out.Approvals {
		out.Approvals[i] = s.withExpiry(out.Approvals[i])
	}
	if out.Approvals == nil {
		out.Approvals = []bindings.Approval{}
	}
	return out, nil
}

// leaseAsRead is the statement a write as read sends first: the lease of
// run runID taken for owner as lease says (sqlLeaseAsRead), its failure
// read as *agents.RunBusyError.
func (s *Store) leaseAsRead(lease storeio.LeaseAsRead, tenantID, runID, owner string) (*batchExtra, error) {
	if owner == "" {
		return nil, invalid("lease owner is empty")
	}
	if err := firstErr(bindings.CheckID("tenant id", tenantID), bindings.CheckID("run id", runID),
		bindings.CheckID("lease owner", owner)); err != nil {
		return nil, err
	}
	now := s.stamp(time.Time{})
	exp := now.Add(lease.TTL).Truncate(time.Microsecond)
	var readExp *time.Time
	if !lease.Run.LeaseExpiresAt.IsZero() {
		t := lease.Run.LeaseExpiresAt
		readExp = &t
	}
	return &batchExtra{
		queueFn: func(b *pgx.Batch) {
			b.Queue(sqlLeaseAsRead, tenantID, runID, owner, exp, now, string(lease.Run.Status), lease.Run.LeaseOwner, readExp, lease.JournalVersion)
		},
		readFn: func(br pgx.BatchResults) error {
			_, err := br.Exec()
			if pgCode(err) == codeRunChanged {
				return &agents.RunBusyError{RunID: runID}
			}
			return err
		},
	}, nil
}

// takeLeaseAsRead serves the Driver:
// kindgi_lease_as_read and a read of the run, in one round trip and one
// transaction.
func (s *Store) takeLeaseAsRead(ctx context.Context, lease storeio.LeaseAsRead, in bindings.LeaseInput) (bindings.Run, error) {
	pre, err := s.leaseAsRead(storeio.LeaseAsRead{TTL: in.TTL, Run: lease.Run, JournalVersion: lease.JournalVersion}, in.TenantID, in.RunID, in.Owner)
	if err != nil {
		return bindings.Run{}, err
	}
	var run bindings.Run
	var found bool
	err = s.send(ctx, "take lease", func(b *pgx.Batch) {
		pre.queue(b)
		b.Queue(sqlGetRun, in.TenantID, in.RunID)
	}, func(br pgx.BatchResults) error {
		if err := pre.read(br); err != nil {
			return err
		}
		return collectOneInto(br, &run, &found, scanRun)
	})
	if err != nil {
		return bindings.Run{}, err
	}
	if !found {
		return bindings.Run{}, &agents.RunJournalUnavailableError{RunID: in.RunID}
	}
	return run, nil
}
