package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/turn"
)

// brokenMessages reads the journal with the output of
// build-initial-messages replaced by JSON that is no list of messages.
type brokenMessages struct {
	*memstore.Store
}

func (s brokenMessages) ReadJournal(ctx context.Context, tenantID, runID string) ([]bindings.JournalEntry, error) {
	es, err := s.Store.ReadJournal(ctx, tenantID, runID)
	for i := range es {
		if es[i].Key == turn.NodeBuildInitialMessages {
			es[i].Output = json.RawMessage(`{"not":"a list"}`)
		}
	}
	return es, err
}

// TestReplayDecodesMessagesOnlyWhenAStepRuns: a Resume that finds its
// approval pending runs nothing and so never reads the initial messages
// (a broken entry goes unnoticed: hitl-required, as ever); once the
// approval is decided the tool call is the first step to run, and the
// broken entry stops it before the tool is called (run-journal-
// unavailable, the run left resumable).
func TestReplayDecodesMessagesOnlyWhenAStepRuns(t *testing.T) {
	f := newFixture(t, emailThenAnswer(), func(s *agent.Spec) { s.Retrieval, s.Guardrails = nil, nil })
	b := f.bindings()
	res := f.park(t, b, "Send the draft.")
	b.Runs, b.Journal = brokenMessages{f.store}, nil
	in := turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}
	if _, err := turn.Resume(t.Context(), in, b); agents.CodeOf(err) != agents.CodeHitlRequired {
		t.Fatalf("pending Resume = %v, want hitl-required", err)
	}
	f.decide(res.Approvals, true)
	_, err := turn.Resume(t.Context(), in, b)
	var ju *agents.RunJournalUnavailableError
	if !errors.As(err, &ju) {
		t.Fatalf("Resume over a broken entry = %v, want run-journal-unavailable", err)
	}
	if n := f.log.count("acme.send-email"); n != 0 {
		t.Fatalf("the tool ran %d times over a journal the drive could not read", n)
	}
	// The store's own journal is intact: a Resume over it completes.
	b.Runs, b.Journal = f.store, f.store
	final, err := turn.Resume(t.Context(), in, b)
	if err != nil || final.Status != turn.StatusCompleted || f.log.count("acme.send-email") != 1 {
		t.Fatalf("Resume = %+v, %v; tool calls %d", final, err, f.log.count("acme.send-email"))
	}
}
