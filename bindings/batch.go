package bindings

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
