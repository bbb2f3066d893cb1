package bindings

import (
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
