package pgstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn"
)

// TestCloseInactiveFromManyWorkers runs six auto-close sweeps at once, each
// with a pool of its own (six workers on one PostgreSQL), over 30 idle
// conversations: each is closed by exactly one sweep.
func TestCloseInactiveFromManyWorkers(t *testing.T) {
	ctx := t.Context()
	tenant := "idle-" + suffix8()
	seconds := 60
	a, err := agent.Define(agent.Spec{
		ID: "acme.minute", Version: "1.0.0", Name: "Idle", Instructions: "You answer.",
		Capabilities:       []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		ConversationPolicy: &agent.ConversationPolicy{AutoCloseAfterInactiveSeconds: &seconds},
	})
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(_ context.Context, _, id, version string) (agent.Agent, error) {
		if id == a.ID && version == a.Version {
			return a, nil
		}
		return agent.Agent{}, &agents.AgentNotFoundError{ID: id, Version: version}
	}
	s := New(testPool(t), nil)
	now := time.Now().UTC().Truncate(time.Microsecond)
	const n, workers = 30, 6
	for i := range n {
		id := fmt.Sprintf("c%02d", i)
		if _, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, ID: id, AgentID: a.ID, AgentVersion: a.Version, OpenedAt: now.Add(-time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendMessage(ctx, bindings.AppendMessageInput{TenantID: tenant, ConversationID: id, Role: bindings.RoleUser, Content: "hi", TurnNumber: 1, CreatedAt: now.Add(-time.Duration(i+2) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	closed := make([]int, workers)
	errs := make([]error, workers)
	for w := range workers {
		pool, err := newPool(testEnv.config.Copy())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		ws := New(pool, nil)
		wg.Go(func() {
			st, err := turn.CloseInactive(ctx, turn.StoreBindings(ws), lookup, now)
			closed[w], errs[w] = st.Closed, err
		})
	}
	wg.Wait()
	total := 0
	for w := range workers {
		if errs[w] != nil {
			t.Fatalf("worker %d: %v", w, errs[w])
		}
		total += closed[w]
	}
	if total != n {
		t.Fatalf("the sweeps closed %d conversations in all, want each of the %d once", total, n)
	}
	for i := range n {
		c, err := s.GetConversation(ctx, tenant, fmt.Sprintf("c%02d", i))
		if err != nil || c.Status != bindings.ConversationClosed {
			t.Fatalf("c%02d: %+v, %v", i, c.Status, err)
		}
	}
}
