package turn

import (
	"context"
	"errors"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/codes"
	"github.com/kindgi/agents/turn/internal/drive"
	"github.com/kindgi/agents/turn/internal/precheck"
	"github.com/kindgi/agents/turn/internal/wait"
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
	return wait.For(ctx, wait.Input[Result]{Runs: b.Runs, Now: b.Now, TenantID: tenantID, RunID: runID,
		Fold: func(ctx context.Context, run bindings.Run) (Result, error) { return fold(ctx, &b, run) }, NotParked: errNotParked})
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
		return Result{}, codes.Journal(run.ID, err)
	}
	if err := precheck.SnapshotFlow(snap, FlowID, FlowVersion); err != nil {
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
