package turn_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// barrier holds the first n callers of wait until all n have arrived, so
// that n turns read the conversation before any of them goes on. Later
// callers pass straight through.
type barrier struct {
	mu      sync.Mutex
	left    int
	release chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{left: n, release: make(chan struct{})} }

// wait blocks until the barrier opens; false means it gave up waiting.
func (b *barrier) wait(ctx context.Context) bool {
	b.mu.Lock()
	if b.left == 0 {
		b.mu.Unlock()
		return true
	}
	b.left--
	if b.left == 0 {
		close(b.release)
	}
	b.mu.Unlock()
	select {
	case <-b.release:
		return true
	case <-ctx.Done():
		return false
	case <-time.After(10 * time.Second):
		return false
	}
}

// errBarrier fails a GetConversation whose barrier never opened.
var errBarrier = errors.New("the other turn never read the conversation")

// racingConversations is a ConversationBinding whose GetConversation
// returns only once every racing turn has read the conversation: the
// turns all see the same TurnCount and pick the same turn number.
type racingConversations struct {
	bindings.ConversationBinding
	gate *barrier
}

func (c racingConversations) GetConversation(ctx context.Context, tenantID, conversationID string) (bindings.Conversation, error) {
	conv, err := c.ConversationBinding.GetConversation(ctx, tenantID, conversationID)
	if !c.gate.wait(ctx) {
		return conv, errBarrier
	}
	return conv, err
}

// racingStore is a whole memstore whose GetConversation waits at the
// barrier: used as every storage binding, it keeps the store's optional
// capabilities (one call for journal entries and a message).
type racingStore struct {
	*memstore.Store
	gate *barrier
}

func (s *racingStore) GetConversation(ctx context.Context, tenantID, conversationID string) (bindings.Conversation, error) {
	return racingConversations{ConversationBinding: s.Store, gate: s.gate}.GetConversation(ctx, tenantID, conversationID)
}

// TestConcurrentTurnsDoNotShareATurnNumber: two turns invoked at once on
// one conversation both pick turn number 1; the binding lets one user
// message of turn 1 in, so one turn completes and the other fails with
// conversation-busy, having stored nothing but its journal. Resuming the
// loser returns the same failure and writes nothing; a new turn gets
// number 2.
func TestConcurrentTurnsDoNotShareATurnNumber(t *testing.T) {
	for _, tc := range []struct {
		name string
		wire func(f *fixture, b *turn.Bindings, gate *barrier)
	}{
		{"SeparateBindings", func(f *fixture, b *turn.Bindings, gate *barrier) {
			b.Conversations, b.Journal = racingConversations{ConversationBinding: f.store, gate: gate}, nil
		}},
		{"OneStore", func(f *fixture, b *turn.Bindings, gate *barrier) {
			s := &racingStore{Store: f.store, gate: gate}
			b.Conversations, b.Snapshots, b.Runs, b.Journal = s, s, s, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, []scripted.Response{scripted.Say("First answer."), scripted.Say("Second answer.")}, nil)
			ctx := t.Context()
			b := f.bindings()
			tc.wire(f, &b, newBarrier(2))

			runIDs := []string{"run-a", "run-b"}
			results := make([]turn.Result, 2)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i, id := range runIDs {
				wg.Go(func() {
					in := f.input("Question " + id)
					in.RunID = id
					results[i], errs[i] = turn.Invoke(ctx, in, b)
				})
			}
			wg.Wait()

			win, lose := 0, 1
			if errs[0] != nil {
				win, lose = 1, 0
			}
			if errs[win] != nil {
				t.Fatalf("neither turn completed: %v; %v", errs[0], errs[1])
			}
			if got := agents.CodeOf(errs[lose]); got != agents.CodeConversationBusy {
				t.Fatalf("the second turn: error %v (code %q), want conversation-busy", errs[lose], got)
			}
			var busy *agents.ConversationBusyError
			if !errors.As(errs[lose], &busy) || busy.ConversationID != f.conv.ID || busy.TurnNumber != 1 {
				t.Fatalf("the second turn's error %#v, want *agents.ConversationBusyError for turn 1 of %s", errs[lose], f.conv.ID)
			}
			winner, loser := runIDs[win], runIDs[lose]
			if r := results[win]; r.Status != turn.StatusCompleted || r.TurnNumber != 1 || r.RunID != winner {
				t.Fatalf("the winning turn: %+v, want completed turn 1 of %s", r, winner)
			}

			// The conversation holds the winner's turn only.
			msgs := f.messages()
			type stored struct {
				Role  bindings.MessageRole
				Turn  int
				RunID string
			}
			var got []stored
			for _, m := range msgs {
				got = append(got, stored{m.Role, m.TurnNumber, m.RunID})
			}
			want := []stored{{bindings.RoleUser, 1, winner}, {bindings.RoleAgent, 1, winner}}
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("stored messages (-want +got):\n%s", d)
			}
			conv, err := f.store.GetConversation(ctx, tenant, f.conv.ID)
			if err != nil {
				t.Fatal(err)
			}
			if conv.TurnCount != 1 || conv.MessageCount != 2 {
				t.Fatalf("conversation after the race: TurnCount %d MessageCount %d, want 1 and 2", conv.TurnCount, conv.MessageCount)
			}

			// The loser journaled its failure at persist-user-message and
			// ended failed, having called no model.
			journal := f.journal(loser)
			var failedAt *bindings.JournalEntry
			for i := range journal {
				if journal[i].Key == turn.NodePersistUserMessage {
					failedAt = &journal[i]
				}
			}
			if failedAt == nil || failedAt.Status != bindings.StepFailed || failedAt.Error == nil || failedAt.Error.Code != agents.CodeConversationBusy {
				t.Fatalf("the loser's %s entry: %+v, want failed with conversation-busy", turn.NodePersistUserMessage, failedAt)
			}
			for _, e := range journal {
				if e.Node == turn.NodeModelCall {
					t.Fatalf("the loser journaled a model call: %+v", e)
				}
			}
			run, err := f.store.GetRun(ctx, tenant, loser)
			if err != nil {
				t.Fatal(err)
			}
			if run.Status != bindings.RunFailed {
				t.Fatalf("the loser's run is %s, want failed", run.Status)
			}
			if n := len(f.provider.Requests()); n != 1 {
				t.Fatalf("the model was called %d times, want once (by the winner)", n)
			}

			// Resuming the loser returns the same failure and writes nothing.
			_, err = turn.Resume(ctx, turn.ResumeInput{TenantID: tenant, RunID: loser, Agent: f.agent}, b)
			var resumed *agents.ConversationBusyError
			if got := agents.CodeOf(err); got != agents.CodeConversationBusy || !errors.As(err, &resumed) {
				t.Fatalf("Resume of the loser: error %v (code %q), want a *ConversationBusyError", err, got)
			}
			if d := cmp.Diff(msgs, f.messages()); d != "" {
				t.Fatalf("Resume of the loser changed the messages (-before +after):\n%s", d)
			}
			if d := cmp.Diff(journal, f.journal(loser)); d != "" {
				t.Fatalf("Resume of the loser changed its journal (-before +after):\n%s", d)
			}

			// Retrying the turn is a new Invoke: it gets the next number.
			res, err := turn.Invoke(ctx, f.input("Question again"), b)
			if err != nil {
				t.Fatalf("the retried turn: %v", err)
			}
			if res.TurnNumber != 2 || res.Response.Content != "Second answer." {
				t.Fatalf("the retried turn: TurnNumber %d, response %q; want turn 2 answered", res.TurnNumber, res.Response.Content)
			}
			if ms := f.messages(); len(ms) != 4 || ms[2].Role != bindings.RoleUser || ms[2].TurnNumber != 2 || ms[2].Content != "Question again" {
				t.Fatalf("after the retried turn: %+v, want its user message as turn 2", ms)
			}
		})
	}
}
