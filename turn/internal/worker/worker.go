// Package worker is the loop behind turn.Worker: it claims the runs that
// need a driver, drives each on a goroutine of its own through turn, and
// deals with the outcome of every drive (a retry with backoff, the count
// of failed drives, the run failed for good); besides, it runs the
// approval sweep on a ticker. It does not import turn: turn gives it the
// run store and, as function values, the drive of a claimed run and what
// the turn's rules say of a drive's error.
package worker

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
)

// Config is a Worker's settings (turn.WorkerOptions with its defaults
// applied) and what it needs from turn.
type Config[R any] struct {
	// ID names the worker in its lease owners and log records.
	ID string
	// Runs is the run store; Claimer is it as a bindings.RunClaimer.
	Runs    bindings.RunBinding
	Claimer bindings.RunClaimer
	// Logger receives the worker's records (nil: none).
	Logger *slog.Logger
	// LeaseTTL is the lease a claim takes.
	LeaseTTL time.Duration
	// The turn.WorkerOptions fields of the same names, none of them zero.
	MaxConcurrent    int
	TenantIDs        []string
	PollInterval     time.Duration
	SweepInterval    time.Duration
	StopGrace        time.Duration
	MaxDriveAttempts int
	// Sweep, when set, runs every SweepInterval (turn.ExpireApprovals) on
	// the drives' context, and returns what it listed, moved and failed.
	Sweep func(ctx context.Context) (listed, moved, failed int, err error)
	// Drive resumes a claimed run as owner (turn's resume); Status is its
	// result's status, for the log; OnRun, when set, is told each drive's
	// outcome (turn.WorkerOptions.OnRun).
	Drive  func(ctx context.Context, run bindings.Run, owner string) (R, error)
	Status func(R) string
	OnRun  func(bindings.Run, R, error)
	// DriverFault reports a drive's error that belongs to the driving
	// process rather than the run; EndsRun, one that is the run's final
	// outcome (turn's rules of the same names).
	DriverFault func(error) bool
	EndsRun     func(error) bool
	// FailEntry is the failed compose-result entry that ends a run for
	// good with err's code and msg.
	FailEntry func(err error, msg string) bindings.JournalEntry
}

// Retry backoff of a run whose drive failed without a final outcome.
const (
	retryBase = 500 * time.Millisecond
	retryMax  = time.Minute
	// maxTracked bounds the failure counts a Worker keeps.
	maxTracked = 10000
)

// ErrStopped is the cancellation cause of the drives a stopping Worker
// cancels after its grace: such a drive journals no outcome and releases
// its lease, so another worker claims the run at once.
var ErrStopped error = &stopped{}

type stopped struct{}

func (*stopped) Error() string { return "the worker stopped before the drive ended" }

// Retryable reports true: another worker drives the run on.
func (*stopped) Retryable() bool { return true }

// Worker claims and drives runs (turn.Worker).
type Worker[R any] struct {
	cfg     Config[R]
	seq     atomic.Uint64
	running atomic.Bool

	mu       sync.Mutex
	failures map[runRef]int // consecutive failed drives, for the backoff
}

type runRef struct{ tenantID, runID string }

// New returns a worker with cfg. Run starts it.
func New[R any](cfg Config[R]) *Worker[R] {
	return &Worker[R]{cfg: cfg, failures: map[runRef]int{}}
}

// Run is turn.Worker.Run once its bindings are checked: it claims and
// drives runs until ctx is done, lets the drives in flight finish for
// StopGrace, then cancels them with ErrStopped, and returns once every
// goroutine it started has ended. It is invalid-bindings when the Worker
// is running already.
func (w *Worker[R]) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return &agents.InvalidBindingsError{Reason: "the Worker is running already"}
	}
	defer w.running.Store(false)

	// Drives outlive ctx by up to StopGrace: they run on a context of
	// their own, cancelled with ErrStopped.
	driveCtx, cancelDrives := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelDrives(ErrStopped)
	var wg sync.WaitGroup
	wake := make(chan struct{}, 1)
	freed := make(chan struct{}, 1)
	signal := func(ch chan struct{}) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	if rw, ok := w.cfg.Runs.(bindings.RunWatcher); ok {
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
	if w.cfg.Sweep != nil && w.cfg.SweepInterval > 0 {
		wg.Go(func() { w.sweep(ctx, driveCtx) })
	}
	w.log(ctx, slog.LevelInfo, "worker started", slog.Int("max_concurrent", w.cfg.MaxConcurrent))

	var inflight atomic.Int64
	idle := 0
	for ctx.Err() == nil {
		free := w.cfg.MaxConcurrent - int(inflight.Load())
		if free <= 0 {
			select {
			case <-ctx.Done():
			case <-freed:
			}
			continue
		}
		owner := w.cfg.ID + "/" + strconv.FormatUint(w.seq.Add(1), 10)
		runs, err := w.cfg.Claimer.ClaimRuns(ctx, bindings.ClaimRunsInput{
			Owner: owner, LeaseTTL: w.cfg.LeaseTTL, Limit: free, TenantIDs: w.tenants(),
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
	grace := time.NewTimer(w.cfg.StopGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		cancelDrives(ErrStopped)
		<-done
	}
	w.log(ctx, slog.LevelInfo, "worker stopped")
	return nil
}

// tenants returns the worker's tenants, rotated on every claim so that a
// claim across several tenants (tenant by tenant) favours none.
func (w *Worker[R]) tenants() []string {
	n := len(w.cfg.TenantIDs)
	if n < 2 {
		return w.cfg.TenantIDs
	}
	k := int(w.seq.Load() % uint64(n))
	return append(append([]string{}, w.cfg.TenantIDs[k:]...), w.cfg.TenantIDs[:k]...)
}

// backoff is the idle wait after idle empty claims: doubling from 10 ms
// up to PollInterval, with jitter (half of it random).
func (w *Worker[R]) backoff(idle int) time.Duration {
	d := w.cfg.PollInterval
	if idle < 16 {
		d = min(d, 10*time.Millisecond<<idle)
	}
	return d/2 + rand.N(d/2+1)
}

// sweep runs Sweep every SweepInterval until ctx is done; its drives run
// on driveCtx, so a stop leaves them resumable.
func (w *Worker[R]) sweep(ctx, driveCtx context.Context) {
	t := time.NewTicker(w.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		listed, moved, failed, err := w.cfg.Sweep(driveCtx)
		if err != nil && ctx.Err() == nil {
			w.log(ctx, slog.LevelWarn, "worker approval sweep failed", slog.String("code", agents.CodeOf(err)), slog.String("error", err.Error()))
		}
		if listed > 0 {
			w.log(ctx, slog.LevelDebug, "worker approval sweep", slog.Int("listed", listed), slog.Int("moved", moved), slog.Int("failed", failed))
		}
	}
}

// log writes a worker record to Logger (nothing without one).
func (w *Worker[R]) log(ctx context.Context, level slog.Level, msg string, attrs ...slog.Attr) {
	if w.cfg.Logger == nil {
		return
	}
	w.cfg.Logger.LogAttrs(ctx, level, msg, append(attrs, slog.String("worker", w.cfg.ID))...)
}
