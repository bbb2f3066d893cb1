package bindings

import "context"

// AppendStepsInput appends several journal entries to one run, in order;
// their Seq is ignored and a zero At means now.
type AppendStepsInput struct {
	TenantID string `json:"tenantId"`
	RunID    string `json:"runId"`
	// Owner, when set, must hold the run's lease (checked once for all
	// entries): otherwise nothing is stored and the error is
	// *agents.RunBusyError.
	Owner   string         `json:"owner,omitempty"`
	Entries []JournalEntry `json:"entries"`
}

// StepBatcher is an optional capability of a RunBinding: appending several
// journal entries in one call (one round trip and one transaction for a
// database). A driver discovers it with a type assertion on its
// RunBinding and falls back to AppendStep one entry at a time.
//
// AppendSteps appends each entry as AppendStep would — idempotent per
// (run, key, phase): for an entry whose key and phase are stored already,
// or repeated earlier in the same call, the stored (first) entry is
// returned with appended false — and returns one entry and one flag per
// input entry, in order. It is all or nothing: a refused lease
// (*agents.RunBusyError), a missing run (*agents.RunJournalUnavailableError)
// or an invalid entry (*agents.InvalidMessageError) stores none of the
// entries. An empty Entries stores nothing and returns empty slices.
type StepBatcher interface {
	AppendSteps(ctx context.Context, in AppendStepsInput) ([]JournalEntry, []bool, error)
}

// FinishRunInput ends a drive of a run: the journal entries still to be
// written, the run's new status, and the release of the drive's lease.
type FinishRunInput struct {
	TenantID string `json:"tenantId"`
	RunID    string `json:"runId"`
	// Owner, when set, must hold the run's lease, as for AppendSteps; its
	// lease is released once the entries and status are stored.
	Owner   string         `json:"owner,omitempty"`
	Entries []JournalEntry `json:"entries,omitempty"`
	Status  RunStatus      `json:"status"`
}

// RunFinisher is an optional capability of a RunBinding: the end of a
// drive in one call. FinishRun appends Entries as StepBatcher.AppendSteps
// does, then sets the run's Status, then releases Owner's lease (as
// ReleaseLease), all or nothing: when it fails, none of it is stored. It
// returns the stored entries and appended flags as AppendSteps does.
//
// A driver without it calls AppendSteps (or AppendStep), SetRunStatus and
// ReleaseLease in that order.
type RunFinisher interface {
	FinishRun(ctx context.Context, in FinishRunInput) ([]JournalEntry, []bool, error)
}

// OpenRunInput is the start of a run's drive: its snapshot and the run.
// Snapshot and Start name the same tenant and run.
type OpenRunInput struct {
	Snapshot RunSnapshotWriteInput `json:"snapshot"`
	Start    StartRunInput         `json:"start"`
}

// OpenRunResult is a run OpenRun started.
type OpenRunResult struct {
	// Run is the run, leased to Start.Owner.
	Run Run `json:"run"`
	// Created reports whether the call created the run (its journal is
	// then empty).
	Created bool `json:"created"`
	// Snapshot is the run's stored snapshot: the first one written for the
	// run, which may be an earlier call's.
	Snapshot RunSnapshotRecord `json:"snapshot"`
	// Journal is the run's journal, in append order, read under the lease
	// just taken.
	Journal []JournalEntry `json:"journal"`
}

// RunOpener is an optional capability of a store that is both a turn's
// RunSnapshotBinding and its RunBinding: the start of a drive in one call.
// OpenRun writes the snapshot (RunSnapshotBinding.Write: the first write
// of a run is kept), starts the run (RunBinding.StartRun, with its
// *agents.RunBusyError), and reads the stored snapshot and the journal. A
// driver uses it only when its snapshot and run bindings are the same
// value, and otherwise calls Write, StartRun, ReadJournal and Read.
type RunOpener interface {
	OpenRun(ctx context.Context, in OpenRunInput) (OpenRunResult, error)
}

// StepMessageAppender is an optional capability of a store that is both a
// turn's RunBinding and its ConversationBinding: journal entries and the
// message that follows them in one call (one round trip for a database).
//
// AppendStepsAndMessage does what AppendSteps(steps) followed by
// AppendMessage(msg) would, the message only when the entries were stored:
// a refused lease (*agents.RunBusyError) or a missing run
// (*agents.RunJournalUnavailableError) stores neither. When the entries
// are stored and the message is refused (its conversation is missing or
// closed), the entries stay, as after the two calls, and the error is the
// message's. A driver uses it only when its run and conversation bindings
// are the same value.
type StepMessageAppender interface {
	AppendStepsAndMessage(ctx context.Context, steps AppendStepsInput, msg AppendMessageInput) ([]JournalEntry, []bool, ConversationMessage, error)
}
