package turn_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/bindingstest"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/turn"
)

// idleAgent is an agent whose conversations close after seconds of
// inactivity (never when seconds is 0).
func idleAgent(t testing.TB, id string, seconds int) agent.Agent {
	t.Helper()
	spec := agent.Spec{
		ID: id, Version: "1.0.0", Name: "Idle", Instructions: "You answer.",
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
	}
	if seconds > 0 {
		spec.ConversationPolicy = &agent.ConversationPolicy{AutoCloseAfterInactiveSeconds: &seconds}
	}
	a, err := agent.Define(spec)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// lookupOf finds the agents given, by id@version, for any tenant.
func lookupOf(as ...agent.Agent) turn.AgentLookup {
	return func(_ context.Context, _, id, version string) (agent.Agent, error) {
		for _, a := range as {
			if a.ID == id && a.Version == version {
				return a, nil
			}
		}
		return agent.Agent{}, &agents.AgentNotFoundError{ID: id, Version: version}
	}
}

func openAt(t testing.TB, s bindings.ConversationBinding, tenant, id string, a agent.Agent, opened time.Time, lastMessage time.Time) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, ID: id, AgentID: a.ID, AgentVersion: a.Version, OpenedAt: opened}); err != nil {
		t.Fatal(err)
	}
	if !lastMessage.IsZero() {
		if _, err := s.AppendMessage(ctx, bindings.AppendMessageInput{TenantID: tenant, ConversationID: id, Role: bindings.RoleUser, Content: "hi", TurnNumber: 1, CreatedAt: lastMessage}); err != nil {
			t.Fatal(err)
		}
	}
}

func status(t testing.TB, s bindings.ConversationBinding, tenant, id string) bindings.ConversationStatus {
	t.Helper()
	c, err := s.GetConversation(context.Background(), tenant, id)
	if err != nil {
		t.Fatal(err)
	}
	return c.Status
}

func TestCloseInactiveClosesWhatIsIdleLongerThanItsAgentSays(t *testing.T) {
	clock := bindingstest.NewClock(time.Time{})
	s := memstore.New(&memstore.Options{Now: clock.Now})
	now := clock.Now()
	minute, forever, gone := idleAgent(t, "acme.minute", 60), idleAgent(t, "acme.forever", 0), idleAgent(t, "acme.gone", 60)
	start := now.Add(-3 * time.Hour)
	openAt(t, s, "acme", "idle-2h", minute, start, now.Add(-2*time.Hour))              // idle 2 h > 60 s: closed
	openAt(t, s, "acme", "never-spoke", minute, now.Add(-61*time.Second), time.Time{}) // idle since opened, 61 s
	openAt(t, s, "acme", "recent", minute, start, now.Add(-30*time.Second))            // idle 30 s: open
	openAt(t, s, "acme", "exactly", minute, start, now.Add(-60*time.Second))           // idle exactly 60 s: not longer, open
	openAt(t, s, "acme", "no-setting", forever, start, now.Add(-2*time.Hour))
	openAt(t, s, "globex", "agent-gone", gone, start, now.Add(-2*time.Hour))

	st, err := turn.CloseInactive(t.Context(), turn.StoreBindings(s), lookupOf(minute, forever), now)
	if err != nil {
		t.Fatal(err)
	}
	if st.Listed != 6 || st.Closed != 2 || st.Skipped != 3 || st.Failed != 1 {
		t.Fatalf("stats %+v, want 6 listed, 2 closed, 3 skipped, 1 failed", st)
	}
	if f := st.Failures[0]; f.ConversationID != "agent-gone" || agents.CodeOf(f.Err) != agents.CodeAgentNotFound {
		t.Errorf("failure %+v, want agent-gone with agent-not-found", f)
	}
	for id, want := range map[string]bindings.ConversationStatus{
		"idle-2h": bindings.ConversationClosed, "never-spoke": bindings.ConversationClosed,
		"recent": bindings.ConversationOpen, "exactly": bindings.ConversationOpen, "no-setting": bindings.ConversationOpen,
	} {
		if got := status(t, s, "acme", id); got != want {
			t.Errorf("%s: %s, want %s", id, got, want)
		}
	}
	// A second sweep finds nothing more to close.
	st, err = turn.CloseInactive(t.Context(), turn.StoreBindings(s), lookupOf(minute, forever), now)
	if err != nil || st.Closed != 0 {
		t.Fatalf("second sweep: %+v, %v", st, err)
	}
}

// closeInactiveFromManyWorkers runs workers sweeps at once over
// n idle conversations of s: each is closed by exactly one of them.
func closeInactiveFromManyWorkers(t *testing.T, s bindings.ConversationBinding, tenant string, now time.Time) {
	t.Helper()
	a := idleAgent(t, "acme.minute", 60)
	const n, workers = 30, 6
	for i := range n {
		openAt(t, s, tenant, fmt.Sprintf("c%02d", i), a, now.Add(-time.Hour), now.Add(-time.Duration(i+2)*time.Minute))
	}
	var wg sync.WaitGroup
	stats := make([]turn.CloseStats, workers)
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			stats[w], errs[w] = turn.CloseInactive(t.Context(), turn.Bindings{Conversations: s}, lookupOf(a), now)
		})
	}
	wg.Wait()
	closed := 0
	for w := range workers {
		if errs[w] != nil {
			t.Fatalf("worker %d: %v", w, errs[w])
		}
		closed += stats[w].Closed
	}
	if closed != n {
		t.Fatalf("the workers closed %d conversations in all, want each of the %d once", closed, n)
	}
	for i := range n {
		if got := status(t, s, tenant, fmt.Sprintf("c%02d", i)); got != bindings.ConversationClosed {
			t.Fatalf("c%02d is %s", i, got)
		}
	}
}

func TestCloseInactiveFromManyWorkers(t *testing.T) {
	clock := bindingstest.NewClock(time.Time{})
	closeInactiveFromManyWorkers(t, memstore.New(&memstore.Options{Now: clock.Now}), "acme", clock.Now())
}

func TestCloseInactiveNeedsItsBindings(t *testing.T) {
	s := memstore.New(nil)
	lookup := lookupOf()
	for name, c := range map[string]struct {
		b      turn.Bindings
		lookup turn.AgentLookup
	}{
		"no conversations":      {turn.Bindings{}, lookup},
		"no listing capability": {turn.Bindings{Conversations: conversationsOnly{s}}, lookup},
		"no agent lookup":       {turn.Bindings{Conversations: s}, nil},
	} {
		if _, err := turn.CloseInactive(t.Context(), c.b, c.lookup, time.Now()); agents.CodeOf(err) != agents.CodeInvalidBindings {
			t.Errorf("%s: %v, want invalid-bindings", name, err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := turn.CloseInactive(ctx, turn.Bindings{Conversations: s}, lookup, time.Now())
	var ab *agents.TurnAbortedError
	if !errors.As(err, &ab) || ab.Reason != agents.AbortExternal {
		t.Errorf("cancelled: %v, want turn-aborted (external)", err)
	}
}
