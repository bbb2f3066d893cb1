// Package wait waits for a run's outcome, behind turn.Wait: it watches or
// polls the run store until the run has finished or parked, then has turn
// fold the run's journal into what its drive returned. It never drives
// the run. It does not import turn: turn gives it the store and the fold.
package wait

import (
	"context"
	"errors"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/codes"
)

// poll is how often For looks at the run when the store tells it about
// changes (bindings.RunWatcher), as a safety net; without one it polls
// from pollMin up to poll.
const (
	poll    = time.Second
	pollMin = 20 * time.Millisecond
)

// Input is what For waits with.
type Input[R any] struct {
	// Runs is the run store; a bindings.RunWatcher wakes the wait.
	Runs bindings.RunBinding
	// Now is the clock that lease expiries are read on (nil: time.Now).
	Now func() time.Time
	// TenantID and RunID name the run.
	TenantID, RunID string
	// Fold rebuilds, from its journal and calling nothing, what the drive
	// that finished or parked run returned. It returns NotParked for a
	// parked run whose approvals were decided meanwhile.
	Fold      func(ctx context.Context, run bindings.Run) (R, error)
	NotParked error
}

// For returns in.Fold's outcome of the run once the run has one: it has
// completed or failed, or it is parked (suspended, no driver holding its
// lease, its approvals not all decided). An unknown run is
// run-journal-unavailable; ctx done ends the wait with turn-aborted.
func For[R any](ctx context.Context, in Input[R]) (R, error) {
	var zero R
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var changes <-chan bindings.RunChange
	if w, ok := in.Runs.(bindings.RunWatcher); ok {
		changes, _ = w.WatchRuns(wctx) // an error: poll
	}
	every := pollMin
	if changes != nil {
		every = poll
	}
	timer := time.NewTimer(every)
	defer timer.Stop()
	for {
		res, err, done := outcome(ctx, &in)
		if done {
			return res, err
		}
		if changes == nil {
			every = min(2*every, poll)
		}
		timer.Reset(every)
	wait:
		for {
			select {
			case <-ctx.Done():
				return zero, codes.Aborted(ctx)
			case <-timer.C:
				break wait
			case c, ok := <-changes:
				if !ok {
					changes = nil
					break wait
				}
				if c.RunID == "" || (c.TenantID == in.TenantID && c.RunID == in.RunID) {
					break wait
				}
			}
		}
	}
}

// outcome reads the run's outcome; done is false while it has none yet.
func outcome[R any](ctx context.Context, in *Input[R]) (res R, err error, done bool) {
	run, err := in.Runs.GetRun(ctx, in.TenantID, in.RunID)
	if err != nil {
		if aerr := codes.Aborted(ctx); aerr != nil {
			return res, aerr, true
		}
		if agents.IsRetryable(err) {
			return res, nil, false
		}
		return res, codes.Journal(in.RunID, err), true
	}
	switch run.Status {
	case bindings.RunCompleted, bindings.RunFailed, bindings.RunSuspended:
	default:
		return res, nil, false
	}
	if run.Status == bindings.RunSuspended && leaseHeld(in.Now, run) {
		return res, nil, false // being driven: not parked for long
	}
	folded, err := in.Fold(ctx, run)
	switch {
	case errors.Is(err, in.NotParked):
		return res, nil, false
	case err != nil && run.Status == bindings.RunSuspended:
		// A parked run whose journal does not fold yet is being moved on.
		return res, nil, false
	}
	return folded, err, true
}

// leaseHeld reports whether a driver holds run's lease: an owner whose
// lease has not expired on the clock now (nil: time.Now). A suspended run
// whose lease expired is parked: its driver died between parking it and
// giving the lease up (or a renewal of the lease landed after the
// release), and nobody claims a run parked on approvals still pending, so
// waiting for that driver would never end.
func leaseHeld(now func() time.Time, run bindings.Run) bool {
	if run.LeaseOwner == "" {
		return false
	}
	if run.LeaseExpiresAt.IsZero() {
		return true
	}
	if now == nil {
		now = time.Now
	}
	return run.LeaseExpiresAt.After(now())
}
