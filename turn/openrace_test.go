package turn_test

import (
	"context"
	"testing"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/turn"
)

// TestInvokeWhoseRunAnotherDriverCreated: an Invoke whose new run another
// Invoke of the same run id creates between its Open (which read the run
// as missing) and its first write stores nothing (the first write, which
// creates the run, finds it created), opens the run as it finds it and
// returns that run's result: one user message, one run, the model called
// by the winner only.
func TestInvokeWhoseRunAnotherDriverCreated(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), nil)
	b := f.bindings()
	ctx := context.Background()
	in := f.input("Draft an NDA.")
	in.RunID = "run-raced"
	raced := false
	var won turn.Result
	var wonErr error
	b.PolicyRegistry = memstore.Policies{Fail: func(bindings.PolicyRequest) error {
		if !raced { // the other driver, during this one's setup (not during its own)
			raced = true
			won, wonErr = turn.Invoke(ctx, in, b)
		}
		return nil
	}}
	res, err := turn.Invoke(ctx, in, b)
	if wonErr != nil || won.Status != turn.StatusCompleted {
		t.Fatalf("the other Invoke: %+v, %v", won, wonErr)
	}
	if err != nil || res.Status != turn.StatusCompleted || res.RunID != won.RunID || res.Response.Content != won.Response.Content {
		t.Fatalf("Invoke: %+v, %v; want the other Invoke's result %+v", res, err, won)
	}
	users := 0
	for _, m := range f.messages() {
		if m.Role == bindings.RoleUser {
			users++
		}
	}
	if users != 1 {
		t.Errorf("%d user messages stored, want 1", users)
	}
	if n := len(f.provider.Requests()); n != 2 {
		t.Errorf("the model was called %d times, want 2 (the other Invoke's turn)", n)
	}
}
