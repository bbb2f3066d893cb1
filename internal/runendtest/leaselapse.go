package runendtest

import (
	"errors"
	"strings"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/bindingstest"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// RunLeaseLapse checks, over any store, that a driver stalled in a tool
// call past its lease (the store's clock moves on while the tool runs) is
// told so: its next write is refused run-busy, with a message that says
// its own lease expired when nobody took the run, and "being driven by
// another process" only when another owner holds it. Either way the run
// stays resumable. newStore returns a store whose clock is now.
func RunLeaseLapse(t *testing.T, newStore func(t *testing.T, now func() time.Time) Store) {
	t.Helper()
	for _, tc := range []struct {
		name     string
		takeover bool
	}{
		{name: "expired"},
		{name: "taken by another", takeover: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			clock := bindingstest.NewClock(time.Time{})
			store := newStore(t, clock.Now)
			c := newCase(t, store, scripted.Call("call_1", "acme.lookup", map[string]any{"q": "answer"}), scripted.Say("The answer is 42."))
			runID := "run-stalled-" + c.conv
			stalled := false
			c.onCall = func() {
				if stalled {
					return
				}
				stalled = true
				clock.Advance(2 * time.Minute) // the driver stalls past its lease
				if tc.takeover {
					if _, err := store.AcquireLease(ctx, bindings.LeaseInput{TenantID: Tenant, RunID: runID, Owner: "other-driver", TTL: time.Minute}); err != nil {
						t.Errorf("AcquireLease by another driver: %v", err)
					}
				}
			}
			c.b.LeaseTTL = time.Minute
			_, err := turn.Invoke(ctx, turn.Input{TenantID: Tenant, RunID: runID, Agent: c.agent, ConversationID: c.conv, UserMessage: "What is the answer?"}, c.b)
			checkLeaseLapse(t, err, tc.takeover, "other-driver")
			if tc.takeover {
				clock.Advance(2 * time.Minute) // the other driver is gone too
			}
			res, err := turn.Resume(ctx, turn.ResumeInput{TenantID: Tenant, RunID: runID, Agent: c.agent}, c.b)
			if err != nil || res.Status != turn.StatusCompleted {
				t.Fatalf("Resume after the lapse: %+v, %v; want completed", res.Status, err)
			}
		})
	}
}

// checkLeaseLapse checks the error of a driver whose lease lapsed: taken
// by owner when takeover is set, expired and free otherwise.
func checkLeaseLapse(t *testing.T, err error, takeover bool, owner string) {
	t.Helper()
	var busy *agents.RunBusyError
	if !errors.As(err, &busy) || agents.CodeOf(err) != agents.CodeRunBusy {
		t.Fatalf("stalled drive: %v, want *agents.RunBusyError", err)
	}
	msg := err.Error()
	if takeover {
		if busy.LeaseExpired || busy.Owner != owner || !strings.Contains(msg, "being driven by another process") {
			t.Fatalf("stalled drive after a takeover: %q (%+v), want another process (%s) named", msg, *busy, owner)
		}
		return
	}
	if !busy.LeaseExpired || busy.Owner != "" || !strings.Contains(msg, "lease expired") || strings.Contains(msg, "another process") {
		t.Fatalf("stalled drive: %q (%+v), want its own lease expired, no other process", msg, *busy)
	}
}
