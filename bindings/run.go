package bindings

import (
	"context"
	"encoding/json"
	"time"
)

// RunSnapshotRecord is what Resume needs to rebuild a turn's input: written
// once, before the run's first side effect.
type RunSnapshotRecord struct {
	TenantID       string `json:"tenantId"`
	RunID          string `json:"runId"`
	FlowID         string `json:"flowId"`
	FlowVersion    string `json:"flowVersion"`
	AgentID        string `json:"agentId"`
	AgentVersion   string `json:"agentVersion"`
	ConversationID string `json:"conversationId,omitempty"`
	ProjectID      string `json:"projectId,omitempty"`
	// Input is the turn's input as JSON (the turn package owns its shape).
	Input     json.RawMessage `json:"input"`
	CreatedAt time.Time       `json:"createdAt"`
}

// RunSnapshotWriteInput is a snapshot to store; CreatedAt zero means now.
type RunSnapshotWriteInput = RunSnapshotRecord

// RunSnapshotBinding stores run snapshots.
//
// Write is idempotent per (tenant, run id): a second write of the same run
// keeps the first snapshot and returns nil. Read of a missing snapshot (or
// one of another tenant) is *agents.RunSnapshotMissingError.
type RunSnapshotBinding interface {
	Write(ctx context.Context, in RunSnapshotWriteInput) error
	Read(ctx context.Context, tenantID, runID string) (RunSnapshotRecord, error)
}

// RunStatus is the state of a run.
type RunStatus string

// Run states.
const (
	RunRunning   RunStatus = "running"
	RunSuspended RunStatus = "suspended"
	RunCompleted RunStatus = "completed"
	RunFailed    RunStatus = "failed"
)

// Terminal reports whether the run has finished.
func (s RunStatus) Terminal() bool { return s == RunCompleted || s == RunFailed }

// Run is a journaled run of a flow.
type Run struct {
	TenantID    string    `json:"tenantId"`
	ID          string    `json:"id"`
	FlowID      string    `json:"flowId"`
	FlowVersion string    `json:"flowVersion"`
	Status      RunStatus `json:"status"`
	// LeaseOwner and LeaseExpiresAt describe the driver that holds the run;
	// an expired lease is free for anyone to take.
	LeaseOwner     string    `json:"leaseOwner,omitempty"`
	LeaseExpiresAt time.Time `json:"leaseExpiresAt,omitzero"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
}

// StartRunInput creates a run in status running, leased to Owner for
// LeaseTTL.
type StartRunInput struct {
	TenantID    string        `json:"tenantId"`
	RunID       string        `json:"runId"`
	FlowID      string        `json:"flowId"`
	FlowVersion string        `json:"flowVersion"`
	Owner       string        `json:"owner"`
	LeaseTTL    time.Duration `json:"leaseTtl"`
}

// StepStatus is the state a journal entry records for its step.
type StepStatus string

// Step states. A step's entries are started, then completed or failed; a
// step that waits on a person is parked, then completed or failed.
const (
	StepStarted   StepStatus = "started"
	StepCompleted StepStatus = "completed"
	StepFailed    StepStatus = "failed"
	StepParked    StepStatus = "parked"
)

// Phase groups step states for idempotency: started, parked, and result
// (completed or failed).
func (s StepStatus) Phase() string {
	switch s {
	case StepCompleted, StepFailed:
		return "result"
	}
	return string(s)
}

// StepError is the coded error a failed step recorded.
type StepError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// JournalEntry is one record of a run's journal.
type JournalEntry struct {
	// Seq orders a run's entries: strictly increasing in append order,
	// assigned by the binding.
	Seq int64 `json:"seq"`
	// Key is the step's deterministic key ("setup",
	// "agent-loop/2/dispatch-tools/call_1").
	Key    string          `json:"key"`
	Node   string          `json:"node"`
	Status StepStatus      `json:"status"`
	Output json.RawMessage `json:"output,omitempty"`
	Error  *StepError      `json:"error,omitempty"`
	At     time.Time       `json:"at"`
}

// AppendStepInput appends one journal entry; Seq is ignored and At zero
// means now.
type AppendStepInput struct {
	TenantID string `json:"tenantId"`
	RunID    string `json:"runId"`
	// Owner, when set, must hold the run's lease: an append by anyone else
	// fails with *agents.RunBusyError and stores nothing.
	Owner string       `json:"owner,omitempty"`
	Entry JournalEntry `json:"entry"`
}

// LeaseInput asks for (or renews) the lease on a run.
type LeaseInput struct {
	TenantID string        `json:"tenantId"`
	RunID    string        `json:"runId"`
	Owner    string        `json:"owner"`
	TTL      time.Duration `json:"ttl"`
}

// RunBinding is the run journal: runs, their ordered step entries, status
// and the lease that makes one driver per run.
//
//   - StartRun creates the run; starting an existing run id is
//     *agents.RunBusyError when its lease is held by another owner and not
//     expired, and otherwise takes the lease and returns the stored run
//     (its status unchanged).
//   - AppendStep is idempotent per (run, key, phase): when an entry with the
//     same key and Phase exists, the first is kept and returned with
//     appended=false. Entries are read back in append order.
//   - ReadJournal of an unknown run is *agents.RunJournalUnavailableError.
//   - AcquireLease succeeds when the lease is free, expired or already held
//     by the same owner (renewing it), and is *agents.RunBusyError
//     otherwise; exactly one of any number of concurrent acquirers of a
//     free lease wins. ReleaseLease by the owner frees the lease
//     (LeaseOwner becomes ""); by a non-owner it is a no-op.
//   - A missing run is *agents.RunJournalUnavailableError for every method
//     but StartRun.
type RunBinding interface {
	StartRun(ctx context.Context, in StartRunInput) (Run, error)
	GetRun(ctx context.Context, tenantID, runID string) (Run, error)
	AppendStep(ctx context.Context, in AppendStepInput) (entry JournalEntry, appended bool, err error)
	ReadJournal(ctx context.Context, tenantID, runID string) ([]JournalEntry, error)
	SetRunStatus(ctx context.Context, tenantID, runID string, status RunStatus) error
	AcquireLease(ctx context.Context, in LeaseInput) (Run, error)
	ReleaseLease(ctx context.Context, tenantID, runID, owner string) error
}
