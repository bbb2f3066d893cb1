package turn_test

import (
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn"
)

// TestResumeOfAnEndedRunStillLeased: a run that ended but whose last
// driver has not released its lease yet (a finish over the basic bindings
// sets the status, then releases the lease; a Worker failing a run does
// the same) is folded by Resume and by Invoke with its run id, through the store's driver and through
// journal.Adapt alike, with nothing called again; a run that has not ended
// and is held by another driver stays run-busy.
func TestResumeOfAnEndedRunStillLeased(t *testing.T) {
	for _, adapt := range []bool{false, true} {
		f := newFixture(t, searchThenAnswer(), nil)
		b := f.bindings()
		if adapt {
			b.Journal = nil // journal.Adapt of the basic bindings
		}
		want := f.mustInvoke(t, b, "Find a confidentiality clause.")
		calls := f.provider.Calls()
		// The window: the run completed, the lease held by its driver.
		if _, err := f.store.AcquireLease(t.Context(), bindings.LeaseInput{TenantID: tenant, RunID: want.RunID, Owner: "the-last-driver", TTL: time.Minute}); err != nil {
			t.Fatalf("adapt=%v: AcquireLease: %v", adapt, err)
		}
		got, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: want.RunID, Agent: f.agent}, b)
		if err != nil {
			t.Fatalf("adapt=%v: Resume of the ended run = %v, want its result", adapt, err)
		}
		if got.Status != turn.StatusCompleted || got.Response.Content != want.Response.Content || got.Usage != want.Usage {
			t.Errorf("adapt=%v: Resume = %+v, want %+v", adapt, got, want)
		}
		// Invoke again with the run's id (a host retrying the turn) folds it
		// the same way.
		in := f.input("Find a confidentiality clause.")
		in.RunID = want.RunID
		again, err := turn.Invoke(t.Context(), in, b)
		if err != nil {
			t.Fatalf("adapt=%v: Invoke of the ended run = %v, want its result", adapt, err)
		}
		if again.Status != turn.StatusCompleted || again.Response.Content != want.Response.Content || again.Usage != want.Usage {
			t.Errorf("adapt=%v: Invoke = %+v, want %+v", adapt, again, want)
		}
		if n := f.provider.Calls(); n != calls {
			t.Errorf("adapt=%v: the fold called the model: %d calls, want %d", adapt, n, calls)
		}

		// A run that has not ended stays another driver's.
		if err := f.store.SetRunStatus(t.Context(), tenant, want.RunID, bindings.RunRunning); err != nil {
			t.Fatal(err)
		}
		if _, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: want.RunID, Agent: f.agent}, b); agents.CodeOf(err) != agents.CodeRunBusy {
			t.Errorf("adapt=%v: Resume of a running run another driver holds = %v, want run-busy", adapt, err)
		}
		if _, err := turn.Invoke(t.Context(), in, b); agents.CodeOf(err) != agents.CodeRunBusy {
			t.Errorf("adapt=%v: Invoke of a running run another driver holds = %v, want run-busy", adapt, err)
		}
	}
}
