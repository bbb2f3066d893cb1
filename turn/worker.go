package turn

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/drive"
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

// Retry backoff of a run whose drive failed without a final outcome.
const (
	retryBase = 500 * time.Millisecond
	retryMax  = time.Minute
	// maxTracked bounds the failure counts a Worker keeps.
	maxTracked = 10000
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
	b       Bindings
	opts    WorkerOptions
	claimer bindings.RunClaimer
	lookup  AgentLookup
	id      string
	seq     atomic.Uint64
	running atomic.Bool

	mu       sync.Mutex
	failures map[runRef]int // consecutive failed drives, for the backoff
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
	w := &Worker{b: b, opts: opts, id: "worker-" + newID(&b), failures: map[runRef]int{}}
	w.claimer, _ = b.Runs.(bindings.RunClaimer)
	w.lookup = opts.Agents
	if w.lookup == nil {
		w.lookup = b.Agents
	}
	w.b.Agents = w.lookup
	return w
}

// errWorkerStopped is the cancellation cause of the drives a stopping
// Worker cancels after its grace: such a drive journals no outcome and
// releases its lease, so another worker claims the run at once.
var errWorkerStopped = &workerStopped{}

type workerStopped struct{}

func (*workerStopped) Error() string { return "the worker stopped before the drive ended" }

// Retryable reports true: another worker drives the run on.
func (*workerStopped) Retryable() bool { return true }

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
	if w.claimer == nil {
		return &agents.InvalidBindingsError{Reason: "a Worker needs a run store that implements bindings.RunClaimer"}
	}
	if w.lookup == nil {
		return &agents.InvalidBindingsError{Reason: "a Worker needs WorkerOptions.Agents or Bindings.Agents to find each run's agent"}
	}
	if !w.running.CompareAndSwap(false, true) {
		return &agents.InvalidBindingsError{Reason: "the Worker is running already"}
	}
	defer w.running.Store(false)

	// Drives outlive ctx by up to StopGrace: they run on a context of
	// their own, cancelled with errWorkerStopped.
	driveCtx, cancelDrives := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelDrives(errWorkerStopped)
	var wg sync.WaitGroup
	wake := make(chan struct{}, 1)
	freed := make(chan struct{}, 1)
	signal := func(ch chan struct{}) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	if rw, ok := w.b.Runs.(bindings.RunWatcher); ok {
		if changes, err := rw.WatchRuns(ctx); err == nil {
			wg.Go(func() {
				for c := range changes {
					if c.RunID == "" || c.Claimable {
						signal(wake)
					}
				}
			})
		} else {
			w.log(ctx, slog.LevelWarn, "worker polls: the store cannot watch runs", slog.String("code", agents.CodeOf(err)), slog.String("error", err.Error()))
		}
	}
	if _, ok := w.b.Hitl.(bindings.ApprovalSweeper); ok && w.opts.SweepInterval > 0 {
		wg.Go(func() { w.sweep(ctx, driveCtx) })
	}
	w.log(ctx, slog.LevelInfo, "worker started", slog.Int("max_concurrent", w.opts.MaxConcurrent))

	var inflight atomic.Int64
	idle := 0
	for ctx.Err() == nil {
		free := w.opts.MaxConcurrent - int(inflight.Load())
		if free <= 0 {
			select {
			case <-ctx.Done():
			case <-freed:
			}
			continue
		}
		owner := w.id + "/" + strconv.FormatUint(w.seq.Add(1), 10)
		runs, err := w.claimer.ClaimRuns(ctx, bindings.ClaimRunsInput{
			Owner: owner, LeaseTTL: leaseTTL(&w.b), Limit: free, TenantIDs: w.tenants(),
		})
		if err != nil && ctx.Err() == nil {
			w.log(ctx, slog.LevelWarn, "worker claim failed", slog.String("code", agents.CodeOf(err)), slog.String("error", err.Error()))
		}
		for _, run := range runs {
			inflight.Add(1)
			wg.Go(func() {
				defer func() {
					inflight.Add(-1)
					signal(freed)
				}()
				w.drive(driveCtx, run, owner)
			})
		}
		if len(runs) == free {
			idle = 0
			continue // perhaps more: claim again once a slot frees
		}
		if len(runs) > 0 {
			idle = 0
		} else {
			idle++
		}
		t := time.NewTimer(w.backoff(idle))
		select {
		case <-ctx.Done():
		case <-wake:
			idle = 0
		case <-t.C:
		}
		t.Stop()
	}

	w.log(ctx, slog.LevelInfo, "worker stopping", slog.Int64("in_flight", inflight.Load()))
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	grace := time.NewTimer(w.opts.StopGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		cancelDrives(errWorkerStopped)
		<-done
	}
	w.log(ctx, slog.LevelInfo, "worker stopped")
	return nil
}

// tenants returns the worker's tenants, rotated on every claim so that a
// claim across several tenants (tenant by tenant) favours none.
func (w *Worker) tenants() []string {
	n := len(w.opts.TenantIDs)
	if n < 2 {
		return w.opts.TenantIDs
	}
	k := int(w.seq.Load() % uint64(n))
	return append(append([]string{}, w.opts.TenantIDs[k:]...), w.opts.TenantIDs[:k]...)
}

// backoff is the idle wait after idle empty claims: doubling from 10 ms
// up to PollInterval, with jitter (half of it random).
func (w *Worker) backoff(idle int) time.Duration {
	d := w.opts.PollInterval
	if idle < 16 {
		d = min(d, 10*time.Millisecond<<idle)
	}
	return d/2 + rand.N(d/2+1)
}

// drive resumes one claimed run as owner, and deals with its outcome.
func (w *Worker) drive(ctx context.Context, run bindings.Run, owner string) {
	start := time.Now()
	res, err := resume(ctx, ResumeInput{TenantID: run.TenantID, RunID: run.ID}, w.b, owner, &run)
	ref := runRef{run.TenantID, run.ID}
	attrs := []slog.Attr{slog.String("run_id", run.ID), slog.String("tenant_id", run.TenantID), slog.Duration("duration", time.Since(start))}
	bg := context.WithoutCancel(ctx)
	switch {
	case err == nil:
		w.forget(ref)
		w.log(ctx, slog.LevelDebug, "worker drove run", append(attrs, slog.String("status", string(res.Status)))...)
	case ctx.Err() != nil:
		// Stopped: the turn released its lease; make sure of it (a drive
		// cancelled before it took the lease never had one to release).
		_ = w.b.Runs.ReleaseLease(bg, run.TenantID, run.ID, owner)
		w.log(ctx, slog.LevelInfo, "worker left run to another worker", attrs...)
	default:
		st, gerr := w.b.Runs.GetRun(bg, run.TenantID, run.ID)
		if gerr == nil && (st.Status.Terminal() || st.Status == bindings.RunSuspended ||
			(st.Status == bindings.RunQueued && agents.CodeOf(err) == agents.CodeQuotaExceeded)) {
			// A final outcome, journaled by the turn; or the run parked
			// again on approvals still pending (a claim stores a run it
			// takes as running, so only the drive parks it); or it waits
			// on a quota, queued until its window frees: it is not held
			// for a retry, and is claimed once it may go on.
			w.forget(ref)
			_ = w.b.Runs.ReleaseLease(bg, run.TenantID, run.ID, owner) // a failure before the drive keeps it
			w.log(ctx, slog.LevelDebug, "worker drove run", append(attrs, slog.String("status", string(st.Status)),
				slog.String("code", agents.CodeOf(err)), slog.String("error", err.Error()))...)
			break
		}
		w.failed(ctx, bg, run, owner, err, attrs)
	}
	if w.opts.OnRun != nil {
		func() {
			defer func() { _ = recover() }()
			w.opts.OnRun(run, res, err)
		}()
	}
}

// failed deals with a drive of run that failed and left it unfinished:
// it records the failure on the run (counting the drive), then holds the
// run for a retry, or fails it for good when driving again cannot help or
// the run's drives failed MaxDriveAttempts times.
func (w *Worker) failed(ctx, bg context.Context, run bindings.Run, owner string, err error, attrs []slog.Attr) {
	ref := runRef{run.TenantID, run.ID}
	code := agents.CodeOf(err)
	if code == "" {
		code = agents.CodePersistence // an uncoded failure is the store's
	}
	if code == agents.CodeRunBusy {
		// Another process holds the run: not a failed drive of it.
		w.log(ctx, slog.LevelInfo, "worker left run to its driver", append(attrs,
			slog.String("code", code), slog.String("error", err.Error()), slog.Bool("retryable", true))...)
		return
	}
	msg := err.Error()
	if driverFault(err) {
		msg = "worker " + w.id + " cannot drive this run with its own bindings (another worker may): " + msg
	}
	attempts, ended := w.countFailure(bg, ref, code, msg)
	if ended {
		// The run ended meanwhile (the store records nothing on it).
		w.forget(ref)
		_ = w.b.Runs.ReleaseLease(bg, run.TenantID, run.ID, owner)
		w.log(ctx, slog.LevelDebug, "worker drove run", append(attrs, slog.String("code", code), slog.String("error", msg))...)
		return
	}
	attrs = append(attrs, slog.String("code", code), slog.String("error", msg), slog.Int("attempts", attempts),
		slog.Int("max_attempts", w.opts.MaxDriveAttempts))
	retry := agents.IsRetryable(err) || driverFault(err) || !endsRun(err)
	if !retry || attempts >= w.opts.MaxDriveAttempts {
		w.forget(ref)
		ferr := w.failRun(bg, run, owner, err, msg)
		if ferr != nil {
			_ = w.b.Runs.ReleaseLease(bg, run.TenantID, run.ID, owner)
			w.log(ctx, slog.LevelError, "worker could not fail run", append(attrs, slog.Bool("retryable", true),
				slog.String("fail_error", ferr.Error()))...)
			return
		}
		w.log(ctx, slog.LevelWarn, "worker failed run for good", append(attrs, slog.Bool("retryable", false))...)
		return
	}
	delay := backoffDelay(attempts - 1)
	// Hold the run for the backoff: the lease lapses then, and any worker
	// claims it again.
	_, _ = w.b.Runs.AcquireLease(bg, bindings.LeaseInput{TenantID: run.TenantID, RunID: run.ID, Owner: owner, TTL: delay})
	w.log(ctx, slog.LevelWarn, "worker drive failed; retrying later", append(attrs,
		slog.Bool("retryable", true), slog.Duration("retry_in", delay))...)
}

// countFailure records one more failed drive of ref and returns how many
// of its drives failed: counted by the store when it is a
// bindings.RunErrorRecorder (across every worker), else (or when the
// store cannot record it) by this worker. ended reports a run the store
// says has ended, which records nothing.
func (w *Worker) countFailure(ctx context.Context, ref runRef, code, msg string) (attempts int, ended bool) {
	if rec, ok := w.b.Runs.(bindings.RunErrorRecorder); ok {
		e, err := rec.RecordRunError(ctx, bindings.RecordRunErrorInput{TenantID: ref.tenantID, RunID: ref.runID, Code: code, Message: msg})
		if err == nil {
			return e.Attempts, e.Attempts == 0
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.failures) >= maxTracked {
		clear(w.failures)
	}
	w.failures[ref]++
	return w.failures[ref], false
}

// failRun ends run failed with err's code and msg, as the turn ends a run
// whose failure is final: a failed compose-result entry (any later drive
// returns that error without calling anything) and the status failed,
// under the run's lease, which it then releases. A run that another
// driver took meanwhile is left to it.
func (w *Worker) failRun(ctx context.Context, run bindings.Run, owner string, err error, msg string) error {
	if _, lerr := w.b.Runs.AcquireLease(ctx, bindings.LeaseInput{TenantID: run.TenantID, RunID: run.ID, Owner: owner, TTL: leaseTTL(&w.b)}); lerr != nil {
		return lerr
	}
	defer func() { _ = w.b.Runs.ReleaseLease(ctx, run.TenantID, run.ID, owner) }()
	se, detail := drive.EncodeFailure(err)
	se.Message = msg
	e, appended, aerr := w.b.Runs.AppendStep(ctx, bindings.AppendStepInput{TenantID: run.TenantID, RunID: run.ID, Owner: owner,
		Entry: bindings.JournalEntry{Key: NodeComposeResult, Node: NodeComposeResult, Status: bindings.StepFailed, Output: detail, Error: se}})
	if aerr != nil {
		return aerr
	}
	status := bindings.RunFailed
	if !appended && e.Status == bindings.StepCompleted {
		status = bindings.RunCompleted // the run ended meanwhile
	}
	return w.b.Runs.SetRunStatus(ctx, run.TenantID, run.ID, status)
}

// backoffDelay is the wait before the retry after n+1 failed drives:
// doubling from retryBase up to retryMax, with jitter.
func backoffDelay(n int) time.Duration {
	d := retryMax
	if n < 10 {
		d = min(d, retryBase<<max(n, 0))
	}
	return d/2 + rand.N(d/2+1)
}

func (w *Worker) forget(ref runRef) {
	w.mu.Lock()
	delete(w.failures, ref)
	w.mu.Unlock()
}

// sweep runs ExpireApprovals every SweepInterval until ctx is done; its
// drives run on driveCtx, so a stop leaves them resumable.
func (w *Worker) sweep(ctx, driveCtx context.Context) {
	t := time.NewTicker(w.opts.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		if w.b.Now != nil {
			now = w.b.Now()
		}
		st, err := ExpireApprovals(driveCtx, w.b, w.lookup, now)
		if err != nil && ctx.Err() == nil {
			w.log(ctx, slog.LevelWarn, "worker approval sweep failed", slog.String("code", agents.CodeOf(err)), slog.String("error", err.Error()))
		}
		if st.Listed > 0 {
			w.log(ctx, slog.LevelDebug, "worker approval sweep", slog.Int("listed", st.Listed), slog.Int("moved", st.Moved), slog.Int("failed", st.Failed))
		}
	}
}

// log writes a worker record to Bindings.Logger (nothing without one).
func (w *Worker) log(ctx context.Context, level slog.Level, msg string, attrs ...slog.Attr) {
	if w.b.Logger == nil {
		return
	}
	w.b.Logger.LogAttrs(ctx, level, msg, append(attrs, slog.String("worker", w.id))...)
}
