package bindings

import (
	"context"
	"time"
)

// ReopenRunInput names a run a driver continues: a Resume, or a run a
// RunClaimer has just leased to Owner.
type ReopenRunInput struct {
	TenantID string `json:"tenantId"`
	RunID    string `json:"runId"`
	// Owner takes the run's lease for TTL, as RunBinding.AcquireLease
	// does, unless Held.
	Owner string        `json:"owner"`
	TTL   time.Duration `json:"ttl,omitempty"`
	// Held says the caller holds the run's lease already (a claim leased
	// it to Owner): nothing is leased, and the reads are as for any
	// caller.
	Held bool `json:"held,omitempty"`
}

// ReopenRunResult is what a resumed drive starts from.
type ReopenRunResult struct {
	// Run is the run as AcquireLease returned it, leased to Owner; zero
	// when the input was Held.
	Run Run `json:"run"`
	// Snapshot is the run's stored snapshot.
	Snapshot RunSnapshotRecord `json:"snapshot"`
	// Journal is the run's journal in append order, read after the lease
	// was taken.
	Journal []JournalEntry `json:"journal"`
}

// RunReopener is an optional capability of a store that is both a turn's
// RunSnapshotBinding and its RunBinding: the start of a resumed drive in
// one call (one round trip for a database) instead of three.
//
// ReopenRun does what RunSnapshotBinding.Read, then (unless in.Held)
// RunBinding.AcquireLease, then RunBinding.ReadJournal would, with their
// errors: *agents.RunSnapshotMissingError when the run has no snapshot
// (and then nothing is leased); AcquireLease's *agents.RunBusyError when
// another owner holds an unexpired lease, and
// *agents.RunJournalUnavailableError when there is no such run. A driver
// uses it only when its snapshot and run bindings are the same value, and
// otherwise makes the three calls. pgstore has it; memstore, with no round
// trips to save, does not (so a test double embedding a memstore.Store
// keeps its own Read, AcquireLease and ReadJournal in the path).
type RunReopener interface {
	ReopenRun(ctx context.Context, in ReopenRunInput) (ReopenRunResult, error)
}
