package runendtest

import (
	"errors"
	"strings"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// RunLeaseLapse checks, over any store, what a driver stalled in a tool
// call past its lease is told (the store's clock moves on while the tool
// runs): its next write is refused run-busy, with a message that says its
// own lease expired when nobody took the run ("expired"), and "being
// driven by another process" with that owner named only when another
// owner holds it ("taken by another"). Either way the run stays
// resumable: Resume completes it. newStore returns a fresh store and a
// function that moves the store's clock on.
func RunLeaseLapse(t *testing.T, newStore func(t *testing.T) (Store, func(time.Duration))) {
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
			s, advance := newStore(t)
			c := newCase(t, s, scripted.Call("call_1", "acme.lookup", map[string]any{"q": "answer"}), scripted.Say("The answer is 42."))
			runID := "run-stalled-" + c.conv
			const other = "other-driver"
			stalled := false
			c.onCall = func() {
				if stalled {
					return
				}
				stalled = true
				advance(2 * time.Minute) // the driver stalls past its lease
				if tc.takeover {
					if _, err := s.AcquireLease(ctx, bindings.LeaseInput{TenantID: Tenant, RunID: runID, Owner: other, TTL: time.Minute}); err != nil {
						t.Errorf("AcquireLease by another driver: %v", err)
					}
				}
			}
			c.b.LeaseTTL = time.Minute
			_, err := turn.Invoke(ctx, turn.Input{TenantID: Tenant, RunID: runID, Agent: c.agent, ConversationID: c.conv, UserMessage: "What is the answer?"}, c.b)
			checkLeaseLapse(t, err, tc.takeover, other)
			if tc.takeover {
				advance(2 * time.Minute) // the other driver is gone too
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
