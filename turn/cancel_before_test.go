package turn_test

import (
	"context"
	"errors"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn"
)

// cancellingSnapshots is a snapshot binding whose calls cancel the turn's
// context and fail with its error, as a store's call does when the
// caller's deadline lands while it is under way.
type cancellingSnapshots struct {
	bindings.RunSnapshotBinding
	cancel context.CancelFunc
}

func (c cancellingSnapshots) Write(ctx context.Context, _ bindings.RunSnapshotWriteInput) error {
	c.cancel()
	return ctx.Err()
}

func (c cancellingSnapshots) Read(ctx context.Context, _, _ string) (bindings.RunSnapshotRecord, error) {
	c.cancel()
	return bindings.RunSnapshotRecord{}, ctx.Err()
}

// TestCancelledBeforeTheDrive: a caller's cancellation that lands before
// the drive begins (while the run is being opened or reopened) gives the
// same turn-aborted (external) error as one during the drive, not the
// store's wrapping of the context's error, and calls nothing.
func TestCancelledBeforeTheDrive(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), nil)
	for _, call := range []struct {
		name string
		run  func(context.Context, turn.Bindings) error
	}{
		{"Invoke", func(ctx context.Context, b turn.Bindings) error {
			_, err := turn.Invoke(ctx, f.input("Find."), b)
			return err
		}},
		{"Resume", func(ctx context.Context, b turn.Bindings) error {
			_, err := turn.Resume(ctx, turn.ResumeInput{TenantID: tenant, RunID: "run-1", Agent: f.agent}, b)
			return err
		}},
	} {
		ctx, cancel := context.WithCancel(t.Context())
		b := f.bindings()
		b.Snapshots, b.Journal = cancellingSnapshots{RunSnapshotBinding: f.store, cancel: cancel}, nil
		err := call.run(ctx, b)
		var ta *agents.TurnAbortedError
		if !errors.As(err, &ta) || ta.Reason != agents.AbortExternal || !errors.Is(err, context.Canceled) {
			t.Errorf("%s = %v, want turn-aborted external wrapping context.Canceled", call.name, err)
		}
	}
	if f.provider.Calls() != 0 || f.log.total() != 0 {
		t.Errorf("a cancelled turn called the model or a tool")
	}
}
