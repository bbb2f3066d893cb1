package turn

import (
	"context"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/codes"
	"github.com/kindgi/agents/turn/internal/drive"
	"github.com/kindgi/agents/turn/internal/worker"
)

// Worker defaults (WorkerOptions fields left zero).
const (
	DefaultMaxConcurrent = 8
	DefaultPollInterval  = time.Second
	DefaultSweepInterval = time.Minute
	DefaultStopGrace     = 10 * time.Second
	// DefaultMaxDriveAttempts is WorkerOptions.MaxDriveAttempts when zero.
	DefaultMaxDriveAttempts = 10
)

// WorkerOptions configure a Worker.
type WorkerOptions struct {
	// Agents finds each run's agent at the version its snapshot recorded;
	// nil uses Bindings.Agents (one of them is required).
	Agents AgentLookup
	// MaxConcurrent is how many runs the worker drives at once (0:
	// DefaultMaxConcurrent).
	MaxConcurrent int
	// TenantIDs restricts the worker to these tenants; empty claims across
	// every tenant the store lets it see (pgstore: a member of
	// kindgi_worker).
	TenantIDs []string
	// PollInterval is the longest an idle worker waits before looking for
	// runs again (0: DefaultPollInterval); it backs off with jitter up to
	// it, and a store that implements bindings.RunWatcher wakes it at once
	// when a run is submitted, released or has an approval decided.
	PollInterval time.Duration
	// SweepInterval is how often the worker runs ExpireApprovals, so that
	// expired approvals get their on-timeout outcome (0:
	// DefaultSweepInterval; negative: never). It needs a HITL binding that
	// implements bindings.ApprovalSweeper.
	SweepInterval time.Duration
	// StopGrace is how long a stopping worker lets its drives finish
	// before it cancels them (0: DefaultStopGrace).
	StopGrace time.Duration
	// MaxDriveAttempts is how many failed drives of a run (drives that
	// ended with an error and left it unfinished) any number of workers
	// make before one of them fails the run for good with the last
	// failure's code (0: DefaultMaxDriveAttempts). The count lives in the
	// store (bindings.RunErrorRecorder), so it holds across workers; with
	// a store that lacks it, each worker counts its own drives.
	MaxDriveAttempts int
	// OnRun, when set, is told each drive's outcome: the run as claimed,
	// and what Resume returned. It is called from the drive's goroutine
	// (concurrently for concurrent drives); a panic in it is recovered.
	OnRun func(bindings.Run, Result, error)
}

// Worker finds, claims and drives every run that needs a driver: queued
// runs (Submit), runs whose driver died (an expired lease), and parked
// runs whose approvals were decided or expired. Any number of workers, in
// any number of processes, share one store: a run is driven by one of
// them at a time, and any of them finishes any run.
type Worker struct {
	b      Bindings
	lookup AgentLookup
	loop   *worker.Worker[Result]
}

// NewWorker returns a worker over b: b.Runs must implement
// bindings.RunClaimer (memstore and pgstore do). Run starts it.
func NewWorker(b Bindings, opts WorkerOptions) *Worker {
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = DefaultMaxConcurrent
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.SweepInterval == 0 {
		opts.SweepInterval = DefaultSweepInterval
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = DefaultStopGrace
	}
	if opts.MaxDriveAttempts <= 0 {
		opts.MaxDriveAttempts = DefaultMaxDriveAttempts
	}
	w := &Worker{b: b, lookup: opts.Agents}
	if w.lookup == nil {
		w.lookup = b.Agents
	}
	w.b.Agents = w.lookup
	claimer, _ := b.Runs.(bindings.RunClaimer)
	cfg := worker.Config[Result]{
		ID: "worker-" + newID(&b), Runs: b.Runs, Claimer: claimer, Logger: b.Logger, LeaseTTL: leaseTTL(&b),
		MaxConcurrent: opts.MaxConcurrent, TenantIDs: opts.TenantIDs, PollInterval: opts.PollInterval,
		SweepInterval: opts.SweepInterval, StopGrace: opts.StopGrace, MaxDriveAttempts: opts.MaxDriveAttempts,
		Drive: func(ctx context.Context, run bindings.Run, owner string) (Result, error) {
			return resume(ctx, ResumeInput{TenantID: run.TenantID, RunID: run.ID}, w.b, owner, &run)
		},
		Status:      func(res Result) string { return string(res.Status) },
		OnRun:       opts.OnRun,
		DriverFault: codes.DriverFault,
		EndsRun:     codes.EndsRun,
		// A run failed for good gets a failed compose-result entry, as the
		// turn ends a run whose failure is final (drive.FailedEntry).
		FailEntry: func(err error, msg string) bindings.JournalEntry {
			return drive.FailedEntry(NodeComposeResult, err, msg)
		},
	}
	if _, ok := b.Hitl.(bindings.ApprovalSweeper); ok {
		cfg.Sweep = func(ctx context.Context) (int, int, int, error) {
			now := time.Now()
			if w.b.Now != nil {
				now = w.b.Now()
			}
			st, err := ExpireApprovals(ctx, w.b, w.lookup, now)
			return st.Listed, st.Moved, st.Failed, err
		}
	}
	w.loop = worker.New(cfg)
	return w
}

// errWorkerStopped is the cancellation cause of the drives a stopping
// Worker cancels after its grace (worker.ErrStopped): such a drive
// journals no outcome and releases its lease, so another worker claims
// the run at once.
var errWorkerStopped = worker.ErrStopped

// Run claims and drives runs until ctx is done, then stops: it claims no
// more, lets the drives in flight finish for StopGrace, then cancels them
// (their runs are left as they are, their leases released, for another
// worker to claim at once) and returns once every goroutine it started
// has ended. It returns nil after a stop, and an *agents.InvalidBindingsError
// at once when the bindings cannot run a worker (no claimer, no agent
// lookup, a required binding missing) or when the Worker is running
// already.
//
// A drive that fails and leaves the run unfinished is recorded on the run
// (bindings.RunErrorRecorder: its code, message, time and the count of
// such drives, shown by GetRun, ListRuns and kindgi runs) and retried with
// exponential backoff and jitter: the worker keeps the run's lease for
// the backoff, so no worker claims it before then. Such a drive is
// retried only when driving again can help: the error is
// agents.IsRetryable, or it belongs to this worker rather than the run
// (its bindings lack the provider the run was routed to, a tool, the
// agent: another worker may drive it), which the recorded message says.
// Any other error ends the run at once, failed with that code; and after
// MaxDriveAttempts failed drives the run is failed with the last code.
// A final outcome is journaled by the turn, as always, and reported to
// OnRun.
func (w *Worker) Run(ctx context.Context) error {
	if err := checkBindings(&w.b, false); err != nil {
		return &agents.InvalidBindingsError{Reason: err.Error()}
	}
	if _, ok := w.b.Runs.(bindings.RunClaimer); !ok {
		return &agents.InvalidBindingsError{Reason: "a Worker needs a run store that implements bindings.RunClaimer"}
	}
	if w.lookup == nil {
		return &agents.InvalidBindingsError{Reason: "a Worker needs WorkerOptions.Agents or Bindings.Agents to find each run's agent"}
	}
	return w.loop.Run(ctx)
}
