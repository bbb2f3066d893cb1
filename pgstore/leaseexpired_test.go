package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/bindingstest"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// TestStalledDriverIsToldItsLeaseExpired stalls a driver in a tool call
// past its lease on pgstore (the store's clock moves on while the tool
// runs): its next write is refused run-busy, with a message that says its
// own lease expired when nobody took the run, and "being driven by another
// process" only when another owner holds it. The run stays resumable.
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
			clock := bindingstest.NewClock(time.Time{})
			store := New(testPool(t), &Options{Now: clock.Now})
			a, conv := racingConversation(t, store)
			runID := "run-stalled-" + conv.ID
			stalled := false
			tools := registry.NewTools()
			err := tools.Add(turnTenant, bindings.ToolDescriptor{ID: "acme.lookup", Version: "1.0.0", InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(ctx context.Context, _ json.RawMessage, _ bindings.CallContext) (json.RawMessage, error) {
					if !stalled {
						stalled = true
						clock.Advance(2 * time.Minute) // the driver stalls past its lease
						if tc.takeover {
							if _, err := store.AcquireLease(ctx, bindings.LeaseInput{TenantID: turnTenant, RunID: runID, Owner: "other-driver", TTL: time.Minute}); err != nil {
								t.Errorf("AcquireLease by another driver: %v", err)
							}
						}
					}
					return json.RawMessage(`{"answer":"42"}`), nil
				})
			if err != nil {
				t.Fatal(err)
			}
			b := turn.Bindings{
				Providers: bindings.Providers{answerModel{}}, Tools: tools, Memory: store,
				Conversations: store, Snapshots: store, Runs: store, Hitl: store, Journal: store,
				LeaseTTL: time.Minute,
			}
			_, err = turn.Invoke(ctx, turn.Input{TenantID: turnTenant, RunID: runID, Agent: a, ConversationID: conv.ID, UserMessage: "What is the answer?"}, b)
			var busy *agents.RunBusyError
			if !errors.As(err, &busy) || agents.CodeOf(err) != agents.CodeRunBusy {
				t.Fatalf("stalled drive: %v, want *agents.RunBusyError", err)
			}
			msg := err.Error()
			if tc.takeover {
				if busy.LeaseExpired || busy.Owner != "other-driver" || !strings.Contains(msg, "being driven by another process") {
					t.Fatalf("stalled drive after a takeover: %q (%+v), want another process (other-driver) named", msg, *busy)
				}
				clock.Advance(2 * time.Minute) // the other driver is gone too
			} else if !busy.LeaseExpired || busy.Owner != "" || !strings.Contains(msg, "lease expired") || strings.Contains(msg, "another process") {
				t.Fatalf("stalled drive: %q (%+v), want its own lease expired, no other process", msg, *busy)
			}
			res, err := turn.Resume(ctx, turn.ResumeInput{TenantID: turnTenant, RunID: runID, Agent: a}, b)
			if err != nil || res.Status != turn.StatusCompleted {
				t.Fatalf("Resume after the lapse: %+v, %v; want completed", res.Status, err)
			}
		})
	}
}
