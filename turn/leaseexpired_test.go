package turn_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/turn"
)

// TestStalledDriverIsToldItsLeaseExpired stalls a driver in a tool call
// past its lease (the store's clock moves on while the tool runs): its
// next write is refused run-busy, with a message that says its own lease
// expired when nobody took the run, and "being driven by another process"
// only when another owner holds it. Either way the run stays resumable.
func TestStalledDriverIsToldItsLeaseExpired(t *testing.T) {
	for _, tc := range []struct {
		name     string
		takeover bool
	}{
		{name: "expired"},
		{name: "taken by another", takeover: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			clock := newClock()
			store := memstore.New(&memstore.Options{Now: clock.Now})
			a := racingAgent(t)
			conv, err := store.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, AgentID: a.ID, AgentVersion: a.Version})
			if err != nil {
				t.Fatal(err)
			}
			const runID = "run-stalled"
			stalled := false
			b := racingBindings(t, store, &racingLog{}, 0, "tool", func(context.Context) {
				if stalled {
					return
				}
				stalled = true
				clock.Advance(2 * time.Minute) // the driver stalls past its lease
				if tc.takeover {
					if _, err := store.AcquireLease(ctx, bindings.LeaseInput{TenantID: tenant, RunID: runID, Owner: "other-driver", TTL: time.Minute}); err != nil {
						t.Errorf("AcquireLease by another driver: %v", err)
					}
				}
			})
			b.LeaseTTL = time.Minute
			_, err = turn.Invoke(ctx, turn.Input{TenantID: tenant, RunID: runID, Agent: a, ConversationID: conv.ID, UserMessage: "What is the answer?"}, b)
			checkLeaseLapse(t, err, tc.takeover, "other-driver")
			if tc.takeover {
				clock.Advance(2 * time.Minute) // the other driver is gone too
			}
			res, err := turn.Resume(ctx, turn.ResumeInput{TenantID: tenant, RunID: runID, Agent: a}, b)
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
