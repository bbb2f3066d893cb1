package bindings

import (
	"time"
)

// ReadResumeRunResult is what OptimisticRunResumer.ReadResumeRun read: what
// ResumeRun reads, with no lease taken.
type ReadResumeRunResult struct {
	// ResumeRunResult is the snapshot, the journal and the approvals as
	// ResumeRun reads them; its Run is the run as read (not leased: its
	// status and lease as they are).
	ResumeRunResult
	// JournalVersion is the store's version of the run's journal as read:
	// a number that every write of the run's journal changes, read before
	// the journal (so that a journal read with more entries than this
	// version knows can only fail the lease). Only the store that returned
	// it reads it.
	JournalVersion int64 `json:"journalVersion"`
}

// LeaseAsRead is the lease a resumed drive's first write takes, in the same
// transaction, on the condition that the run is still as
// OptimisticRunResumer.ReadResumeRun read it: its status, lease owner,
// lease expiry and journal version unchanged, and the lease free for the
// write's owner (free, expired or the owner's). The owner is the write's
// (AppendStepsInput.Owner, FinishRunInput.Owner, LeaseInput.Owner), who
// then holds the lease for TTL from the write, as AcquireLease would give
// it.
type LeaseAsRead struct {
	TTL time.Duration `json:"ttl"`
	// Run and JournalVersion are ReadResumeRun's.
	Run            Run   `json:"run"`
	JournalVersion int64 `json:"journalVersion"`
}
