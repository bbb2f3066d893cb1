package bindings

import (
	"context"
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

// OptimisticRunResumer is an optional capability of a RunResumer (and of a
// StepBatcher, RunFinisher and MessageStepAppender, which it names): a
// resumed drive takes the run's lease with its first write instead of a
// write of its own (one commit fewer for a database).
//
// ReadResumeRun does what ResumeRun does, with its errors (a lease another
// owner holds unexpired is *agents.RunBusyError), but writes nothing: no
// lease is taken. in.Held must be false.
//
// AppendStepsAsRead, AppendMessageStepAsRead and FinishRunAsRead do what
// StepBatcher.AppendSteps, MessageStepAppender.AppendMessageStep and
// RunFinisher.FinishRun do, with their errors, after taking lease for the
// write's owner in the same transaction. When the run is no longer as read
// (another driver took its lease, or wrote its journal or status, since
// the read), or its lease is not free for the owner, they store nothing
// and return *agents.RunBusyError. TakeLeaseAsRead takes the lease alone,
// with the same condition and error, for a first write that has no such
// form (it returns the run, leased).
//
// OptimisticRunResumerStore returns the store value itself, as
// RunResumerStore does: a driver uses the capability only when that is
// the very binding it holds as its Runs, Snapshots and Hitl.
type OptimisticRunResumer interface {
	RunResumer
	ReadResumeRun(ctx context.Context, in ReopenRunInput) (ReadResumeRunResult, error)
	AppendStepsAsRead(ctx context.Context, lease LeaseAsRead, in AppendStepsInput) ([]JournalEntry, []bool, error)
	AppendMessageStepAsRead(ctx context.Context, lease LeaseAsRead, in MessageStepInput) (MessageStepResult, error)
	FinishRunAsRead(ctx context.Context, lease LeaseAsRead, in FinishRunInput) ([]JournalEntry, []bool, error)
	TakeLeaseAsRead(ctx context.Context, lease LeaseAsRead, in LeaseInput) (Run, error)
	OptimisticRunResumerStore() RunBinding
}
