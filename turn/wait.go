package turn

import (
	"context"
	"errors"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/drive"
)

// waitPoll is how often Wait looks at the run when the store tells it
// about changes (bindings.RunWatcher), as a safety net; without one it
// polls from waitPollMin up to waitPoll.
const (
	waitPoll    = time.Second
	waitPollMin = 20 * time.Millisecond
)

// errNotParked stops the fold of a suspended run whose approvals were
// decided meanwhile: it is about to be continued, not parked.
var errNotParked = errors.New("the run's approvals are decided: it is not parked")

// Wait returns the outcome of a run once it has one: what Invoke (or the
// Resume) that drove it returned — a Result with StatusCompleted, one with
// StatusSuspended and the pending approvals when it parked, or the turn's
// coded error when it failed. It never drives the run: a worker does
// (Worker, or any Invoke or Resume). A run parked on approvals that have
// all been decided since is about to be continued, so Wait waits on.
//
// It takes the bindings the run is driven with (b.Hitl tells a parked run
// from one whose approvals were decided). With a
// store that implements bindings.RunWatcher (memstore, pgstore with
// LISTEN/NOTIFY) it wakes when the run changes; otherwise it polls, at
// most a second apart. An unknown run is run-journal-unavailable;
// cancelling ctx ends the wait with turn-aborted (the run goes on).
func Wait(ctx context.Context, b Bindings, tenantID, runID string) (Result, error) {
	if err := checkBindings(&b, false); err != nil {
		return Result{}, err
	}
	if tenantID == "" || runID == "" {
		return Result{}, &agents.InvalidMessageError{Reason: "wait needs a tenant id and a run id"}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var changes <-chan bindings.RunChange
	if w, ok := b.Runs.(bindings.RunWatcher); ok {
		changes, _ = w.WatchRuns(wctx) // an error: poll
	}
	poll := waitPollMin
	if changes != nil {
		poll = waitPoll
	}
	timer := time.NewTimer(poll)
	defer timer.Stop()
	for {
		res, err, done := outcome(ctx, &b, tenantID, runID)
		if done {
			return res, err
		}
		if changes == nil {
			poll = min(2*poll, waitPoll)
		}
		timer.Reset(poll)
	wait:
		for {
			select {
			case <-ctx.Done():
				return Result{}, &agents.TurnAbortedError{Reason: agents.AbortExternal, Err: ctx.Err()}
			case <-timer.C:
				break wait
			case c, ok := <-changes:
				if !ok {
					changes = nil
					break wait
				}
				if c.RunID == "" || (c.TenantID == tenantID && c.RunID == runID) {
					break wait
				}
			}
		}
	}
}

// outcome reads a run's outcome; done is false while it has none yet.
func outcome(ctx context.Context, b *Bindings, tenantID, runID string) (Result, error, bool) {
	run, err := b.Runs.GetRun(ctx, tenantID, runID)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, &agents.TurnAbortedError{Reason: agents.AbortExternal, Err: ctx.Err()}, true
		}
		if agents.IsRetryable(err) {
			return Result{}, nil, false
		}
		return Result{}, journalError(runID, err), true
	}
	switch run.Status {
	case bindings.RunCompleted, bindings.RunFailed, bindings.RunSuspended:
	default:
		return Result{}, nil, false
	}
	if run.Status == bindings.RunSuspended && leaseHeld(b, run) {
		return Result{}, nil, false // being driven: not parked for long
	}
	res, err := fold(ctx, b, run)
	switch {
	case errors.Is(err, errNotParked):
		return Result{}, nil, false
	case err != nil && run.Status == bindings.RunSuspended:
		// A parked run whose journal does not fold yet is being moved on.
		return Result{}, nil, false
	}
	return res, err, true
}

// leaseHeld reports whether a driver holds run's lease: an owner whose
// lease has not expired. A suspended run whose lease expired is parked: its
// driver died between parking it and giving the lease up (or a renewal of
// the lease landed after the release), and nobody claims a run parked on
// approvals still pending, so waiting for that driver would never end.
func leaseHeld(b *Bindings, run bindings.Run) bool {
	if run.LeaseOwner == "" {
		return false
	}
	if run.LeaseExpiresAt.IsZero() {
		return true
	}
	now := time.Now
	if b.Now != nil {
		now = b.Now
	}
	return run.LeaseExpiresAt.After(now())
}

// fold rebuilds what the drive that finished or parked run returned, from
// its journal, calling nothing.
func fold(ctx context.Context, b *Bindings, run bindings.Run) (Result, error) {
	snap, err := b.Snapshots.Read(ctx, run.TenantID, run.ID)
	if err != nil {
		return Result{}, coded(err, "read run snapshot")
	}
	entries, err := b.Runs.ReadJournal(ctx, run.TenantID, run.ID)
	if err != nil {
		return Result{}, journalError(run.ID, err)
	}
	if err := checkFlow(snap); err != nil {
		return Result{}, err
	}
	a := agent.Agent{ID: snap.AgentID, Version: snap.AgentVersion}
	stored, err := decodeSnapshot(snap, Input{Agent: a})
	if err != nil {
		return Result{}, err
	}
	fb := *b
	fb.OnEvent, fb.Logger = nil, nil // a fold is not a drive: no events, no logs
	jd, native := driverOf(&fb)      // never written: a fold writes nothing
	r := newRun(&fb, jd, native, stored, run.ID, "", run.Status, entries)
	r.Replaying = true
	if st := r.Key(NodeComposeResult); st != nil && st.Result != 0 && r.At(st.Result).Status == bindings.StepFailed {
		return drive.DecodeResult[Result](r.At(st.Result))
	}
	return r.flow(ctx)
}
