package bindings

import (
	"context"
	"encoding/json"
	"time"
	"unicode/utf8"

	agents "github.com/kindgi/agents"
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

// Run states. A queued run was submitted (turn.Submit) and waits for a
// worker to claim it (RunClaimer); a running run has, or had, a driver; a
// suspended run waits on approvals; completed and failed are final.
const (
	RunQueued    RunStatus = "queued"
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
	// LastError is the last failed drive of a run that has not ended (nil
	// when no drive failed, or once the run ended): what a person reading a
	// stuck run needs to know why it is stuck.
	LastError *RunError `json:"lastError,omitempty"`
	// NotBefore, when set, is the earliest time a claim takes the run: a
	// run waiting on a quota (onExceeded "wait") is queued until its
	// window frees (see RunDeferrer).
	NotBefore time.Time `json:"notBefore,omitzero"`
	// ParentRunID and ParentStepKey name the run and the step that started
	// this one, for a sub-agent's child run (both empty for a top-level
	// run). When a child run ends, its parent is claimable again.
	ParentRunID   string `json:"parentRunId,omitempty"`
	ParentStepKey string `json:"parentStepKey,omitempty"`
}

// RunError records the failed drives of a run that did not end: the last
// failure's code and message, when it happened, and how many drives of the
// run failed so far (counted by the store, so across every worker).
type RunError struct {
	Code     string    `json:"code"`
	Message  string    `json:"message"`
	At       time.Time `json:"at"`
	Attempts int       `json:"attempts"`
}

// StartRunInput creates a run in status running (or Status), leased to
// Owner for LeaseTTL (an empty Owner leaves the lease free).
type StartRunInput struct {
	TenantID    string        `json:"tenantId"`
	RunID       string        `json:"runId"`
	FlowID      string        `json:"flowId"`
	FlowVersion string        `json:"flowVersion"`
	Owner       string        `json:"owner"`
	LeaseTTL    time.Duration `json:"leaseTtl"`
	// Status is the status of a run this call creates: empty is
	// RunRunning; RunQueued creates a run for a worker to claim (submit it
	// with an empty Owner). An existing run keeps its status.
	Status RunStatus `json:"status,omitempty"`
	// ParentRunID and ParentStepKey are recorded on a run this call
	// creates (Run.ParentRunID, Run.ParentStepKey): a sub-agent's child
	// run, of the same tenant as its parent. An existing run keeps its
	// own. Both are set or both empty (see CheckParent).
	ParentRunID   string `json:"parentRunId,omitempty"`
	ParentStepKey string `json:"parentStepKey,omitempty"`
}

// CheckParent returns an *agents.InvalidMessageError unless the parent of
// run runID is none (both empty) or a run id (CheckID) other than runID
// with a valid step key (CheckStepKey). Stores call it on a
// StartRunInput's ParentRunID and ParentStepKey before anything is stored.
func CheckParent(runID, parentRunID, parentStepKey string) error {
	switch {
	case parentRunID == "" && parentStepKey == "":
		return nil
	case parentRunID == "":
		return &agents.InvalidMessageError{Reason: "parent step key without a parent run id"}
	case parentStepKey == "":
		return &agents.InvalidMessageError{Reason: "parent run id without a parent step key"}
	case parentRunID == runID:
		return &agents.InvalidMessageError{Reason: "run " + runID + " cannot be its own parent"}
	}
	if err := CheckID("parent run id", parentRunID); err != nil {
		return err
	}
	return CheckStepKey(parentStepKey)
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
	// Owner, when set, must hold the run's lease, unexpired by the store's
	// clock: an append by anyone else, or by the owner once its lease
	// expired (even while nobody else took it), fails with
	// *agents.RunBusyError and stores nothing.
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

// RecordRunErrorInput is one failed drive of a run, for
// RunErrorRecorder.RecordRunError.
type RecordRunErrorInput struct {
	TenantID string `json:"tenantId"`
	RunID    string `json:"runId"`
	// Code and Message are the failure's (agents.CodeOf and Error()); a
	// Code is required.
	Code    string `json:"code"`
	Message string `json:"message"`
}

// MaxRunErrorMessage bounds RecordRunErrorInput.Message in bytes: a
// store keeps the first MaxRunErrorMessage bytes of a longer message (cut
// at a UTF-8 boundary).
const MaxRunErrorMessage = 4096

// RunErrorRecorder is an optional capability of a RunBinding, discovered
// by type assertion: recording the failed drives of a run that did not
// end, so that a stuck run explains itself (Run.LastError) and a bound on
// its drives holds across every worker (turn.WorkerOptions.MaxDriveAttempts).
// memstore and pgstore implement it.
//
// RecordRunError stores in.Code, in.Message and the store's clock as the
// run's LastError, adds one to its Attempts, and returns the stored
// RunError. It records nothing on a run that ended (completed or failed)
// and returns a zero RunError (Attempts 0). GetRun and ListRuns return a
// run's LastError while the run has not ended, and nil once it ended (a
// run's end clears it). An empty code, or a tenant or run id that breaks
// CheckID, is *agents.InvalidMessageError; a missing run is
// *agents.RunJournalUnavailableError. Free text rules hold for Message:
// any text reads back as written (up to MaxRunErrorMessage bytes).
type RunErrorRecorder interface {
	RecordRunError(ctx context.Context, in RecordRunErrorInput) (RunError, error)
}

// CheckRunError returns in with its message cut to MaxRunErrorMessage
// bytes, or invalid-message for an empty code or ids that break CheckID.
// Stores call it first in RecordRunError.
func CheckRunError(in RecordRunErrorInput) (RecordRunErrorInput, error) {
	if err := CheckID("tenant id", in.TenantID); err != nil {
		return in, err
	}
	if err := CheckID("run id", in.RunID); err != nil {
		return in, err
	}
	if in.Code == "" {
		return in, &agents.InvalidMessageError{Reason: "run error code is empty"}
	}
	if len(in.Message) > MaxRunErrorMessage {
		cut := MaxRunErrorMessage
		for cut > MaxRunErrorMessage-utf8.UTFMax && !utf8.RuneStart(in.Message[cut]) {
			cut--
		}
		in.Message = in.Message[:cut]
	}
	return in, nil
}

// ClaimRunsInput asks a RunClaimer for runs to drive.
type ClaimRunsInput struct {
	// Owner is the lease owner the claimed runs are leased to (required).
	Owner string `json:"owner"`
	// LeaseTTL is how long the claimed leases last; zero is
	// DefaultClaimLeaseTTL, negative is invalid.
	LeaseTTL time.Duration `json:"leaseTtl"`
	// Limit caps how many runs one call claims; zero is 1, negative is
	// invalid (a store may cap it further).
	Limit int `json:"limit"`
	// TenantIDs restricts the claim to these tenants; empty means every
	// tenant the store's connection may see.
	TenantIDs []string `json:"tenantIds,omitempty"`
}

// RunClaimer is an optional capability of a RunBinding, discovered by type
// assertion: finding and leasing the runs that need a driver, for workers
// (turn.Worker). The store that implements it also holds the runs'
// approvals (memstore and pgstore do).
//
// ClaimRuns atomically takes the lease, for in.Owner and in.LeaseTTL, on
// up to in.Limit runs that need a driver and are not held by a live lease
// (no owner, or a lease expired by the store's clock), oldest first (by
// CreatedAt, then TenantID, then ID):
//
//   - queued: submitted and never driven (or its claimer died);
//   - running with a free or expired lease: its driver died or gave up;
//   - suspended, with at least one approval or child run, none of its
//     approvals still pending and unexpired (every one was decided or is
//     past its ExpiresAt, by the store's rule for expiry) and none of its
//     child runs (the tenant's runs whose ParentRunID is its ID) queued,
//     running or suspended: what it waited on is settled, so driving it
//     goes on. A suspended run with neither approvals nor children is not
//     claimed (nothing it waits on can settle).
//
// A claimed run is stored as running (it has a driver now: a queued or
// suspended run changes status) and leased to in.Owner; ClaimRuns returns
// the claimed runs as stored, oldest first, an empty slice when nothing
// needs a driver. Any number of concurrent claimers never get the
// same run while the lease lives. A run a claim returned is driven by
// taking its lease again with the same owner (AcquireLease renews it).
//
// Claiming is tenant-scoped like every binding call when in.TenantIDs is
// set. With in.TenantIDs empty it looks across tenants: pgstore does so
// only for a database role that is a member of kindgi_worker (or that
// bypasses row-level security; see its package doc), and for any other
// role it claims nothing. A claim reveals only references and leases:
// everything else about a run is read through tenant-scoped calls.
type RunClaimer interface {
	ClaimRuns(ctx context.Context, in ClaimRunsInput) ([]Run, error)
}

// DeferRunInput puts a run back in the queue until NotBefore.
type DeferRunInput struct {
	TenantID string `json:"tenantId"`
	RunID    string `json:"runId"`
	// Owner must hold the run's lease, unexpired (as for AppendStep).
	Owner     string    `json:"owner"`
	NotBefore time.Time `json:"notBefore"`
}

// RunDeferrer is an optional capability of a RunBinding that is also a
// RunClaimer: putting a run back in the queue for later, for a run waiting
// on a quota. memstore and pgstore implement it.
//
// DeferRun, by the holder of the run's lease, stores the run as queued
// with NotBefore set and its lease released, in one step: no claim takes
// it before NotBefore by the store's clock, and any claim after may. A
// claim clears NotBefore. An owner that does not hold the lease is
// *agents.RunBusyError and changes nothing; a finished run is
// *agents.InvalidMessageError.
type RunDeferrer interface {
	DeferRun(ctx context.Context, in DeferRunInput) error
}

// ListRunsInput asks for one page of a tenant's runs, newest first.
type ListRunsInput struct {
	TenantID string `json:"tenantId"`
	// Statuses keeps the runs in one of these statuses; empty keeps all.
	Statuses []RunStatus `json:"statuses,omitempty"`
	// After, when set, is the ID of the last run of the previous page
	// (RunPage.Next): the page starts after it. A run id the tenant has no
	// run of is *agents.InvalidMessageError.
	After string `json:"after,omitempty"`
	// Limit caps the page: 0 is DefaultRunPageLimit, and a store caps it
	// at MaxRunPageLimit.
	Limit int `json:"limit,omitempty"`
	// ParentRunID, when set, keeps only the child runs of that run (the
	// runs its sub-agent calls started).
	ParentRunID string `json:"parentRunId,omitempty"`
}

// Page sizes of ListRuns.
const (
	DefaultRunPageLimit = 50
	MaxRunPageLimit     = 1000
)

// RunPage is one page of runs, newest first.
type RunPage struct {
	Runs []Run `json:"runs"`
	// Next is the After of the next page: the ID of the page's last run
	// when more runs may follow, "" on the last page.
	Next string `json:"next,omitempty"`
}

// RunLister is an optional capability of a RunBinding, for operators
// (kindgi runs list): the runs of one tenant, a keyset page at a time.
//
// ListRuns returns up to in.Limit of the tenant's runs whose status is in
// in.Statuses (all when empty) and, when in.ParentRunID is set, whose
// ParentRunID is it (the run's children, never another tenant's), ordered by CreatedAt descending, then ID
// descending, starting after the run in.After names. Pages do not skip or
// repeat a run that existed when paging began, whatever is created
// meanwhile (new runs sort before the first page). A negative Limit, an
// unknown status or a ParentRunID that breaks CheckID is
// *agents.InvalidMessageError.
type RunLister interface {
	ListRuns(ctx context.Context, in ListRunsInput) (RunPage, error)
}

// RunChange tells a watcher that a run may need looking at again.
type RunChange struct {
	TenantID string `json:"tenantId"`
	RunID    string `json:"runId"`
	// Status is the run's status after the change, "" when the change is
	// not the run's own (an approval of the run decided).
	Status RunStatus `json:"status,omitempty"`
	// Claimable marks a change after which the run may need a driver: it
	// was submitted, its lease was released while it is not finished, one
	// of its approvals was decided, or one of its child runs ended.
	Claimable bool `json:"claimable,omitempty"`
}

// RunWatcher is an optional capability of a RunBinding, discovered by type
// assertion: being told when runs change, so that waiters (turn.Wait) and
// idle workers (turn.Worker) need not poll. pgstore implements it with
// LISTEN/NOTIFY, memstore in process.
//
// WatchRuns delivers a RunChange on the returned channel, until ctx is
// done (then it closes the channel), after a run is created, changes
// status or has its lease released, after an approval of a run is
// decided, and, for the parent (Claimable, empty Status), after a child
// run completed or failed. Delivery is best effort: it follows the change's commit, a
// watcher that falls behind misses changes, and a RunChange with an empty
// RunID says that changes may have been missed (look at everything
// again). A watcher therefore still polls, only less often. An error
// means the store cannot watch (the caller polls).
type RunWatcher interface {
	WatchRuns(ctx context.Context) (<-chan RunChange, error)
}

// DefaultClaimLeaseTTL is the lease a claim takes when ClaimRunsInput.LeaseTTL
// is zero: the turn's default lease (turn.DefaultLeaseTTL).
const DefaultClaimLeaseTTL = 5 * time.Minute

// CheckClaim returns in with its defaults filled in (LeaseTTL
// DefaultClaimLeaseTTL, Limit 1), or invalid-message for an owner or
// tenant id that breaks CheckID, a negative lease or a negative limit.
// Stores call it first in ClaimRuns.
func CheckClaim(in ClaimRunsInput) (ClaimRunsInput, error) {
	switch {
	case in.LeaseTTL < 0:
		return in, &agents.InvalidMessageError{Reason: "claim lease TTL is negative"}
	case in.Limit < 0:
		return in, &agents.InvalidMessageError{Reason: "claim limit is negative"}
	}
	if err := CheckID("claim owner", in.Owner); err != nil {
		return in, err
	}
	for _, t := range in.TenantIDs {
		if err := CheckID("tenant id", t); err != nil {
			return in, err
		}
	}
	if in.LeaseTTL == 0 {
		in.LeaseTTL = DefaultClaimLeaseTTL
	}
	if in.Limit == 0 {
		in.Limit = 1
	}
	return in, nil
}

// CheckStartRun returns an *agents.InvalidMessageError when a run to
// start has an empty tenant or run id, an id that breaks the id rules
// (CheckID) or a parent that CheckParent refuses, and nil otherwise.
func CheckStartRun(in StartRunInput) error {
	return firstErr(CheckID("tenant id", in.TenantID), CheckID("run id", in.RunID),
		CheckOptionalID("lease owner", in.Owner), CheckOptionalID("flow id", in.FlowID),
		CheckOptionalID("flow version", in.FlowVersion), CheckParent(in.RunID, in.ParentRunID, in.ParentStepKey))
}

// StartStatus is the status of a run a store starts with the requested
// status st: running unless st asks for queued. Any other status is
// *agents.InvalidMessageError: a run starts running or queued.
func StartStatus(st RunStatus) (RunStatus, error) {
	switch st {
	case "", RunRunning:
		return RunRunning, nil
	case RunQueued:
		return RunQueued, nil
	}
	return "", &agents.InvalidMessageError{Reason: "a run starts running or queued, not " + string(st)}
}
