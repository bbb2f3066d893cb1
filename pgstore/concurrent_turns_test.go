package pgstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
)

// turnGate holds the first n reads of the conversation (a drive's Open,
// or GetConversation) until all n have read it, so that n turns pick the
// same turn number.
type turnGate struct {
	mu      sync.Mutex
	left    int
	release chan struct{}
}

func (g *turnGate) wait(ctx context.Context) error {
	g.mu.Lock()
	if g.left == 0 {
		g.mu.Unlock()
		return nil
	}
	g.left--
	if g.left == 0 {
		close(g.release)
	}
	g.mu.Unlock()
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Second):
		return errors.New("the other turns never read the conversation")
	}
}

// gatedStore is a Store (every binding and optional capability of it,
// and its journal driver) whose Open and GetConversation wait at a
// turnGate after reading.
type gatedStore struct {
	*Store
	gate *turnGate
}

// Open is the Store's Open (which reads the conversation for a new run),
// then the gate.
func (s *gatedStore) Open(ctx context.Context, in journal.OpenInput) (journal.Drive, error) {
	d, err := s.Store.Open(ctx, in)
	if err == nil && in.ReadConversation {
		if gerr := s.gate.wait(ctx); gerr != nil {
			return d, gerr
		}
	}
	return d, err
}

func (s *gatedStore) GetConversation(ctx context.Context, tenantID, conversationID string) (bindings.Conversation, error) {
	c, err := s.Store.GetConversation(ctx, tenantID, conversationID)
	if gerr := s.gate.wait(ctx); gerr != nil {
		return c, gerr
	}
	return c, err
}

// TestConcurrentTurnsAcrossStores runs turns on one conversation from two
// Stores with pools of their own — two processes, as far as PostgreSQL
// can tell. Their first turns are made to pick the same number; every
// turn that fails with conversation-busy is retried with a new Invoke, as
// the error says. In the end each turn number has exactly one user
// message, held by a turn that completed.
func TestConcurrentTurnsAcrossStores(t *testing.T) {
	testPool(t)
	const workers, turnsEach = 2, 6
	a := lookupAgent(t, "")
	gate := &turnGate{left: workers, release: make(chan struct{})}
	fixtures := make([]*turnFixture, workers)
	for i := range fixtures {
		pool, err := newPool(testEnv.config.Copy())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		fixtures[i] = newTurnFixture(t, New(pool, nil))
	}
	conv := fixtures[0].open(t, a)
	ctx := t.Context()

	var mu sync.Mutex
	busy := 0
	won := map[int]string{} // turn number → run id
	var wg sync.WaitGroup
	for _, f := range fixtures {
		wg.Go(func() {
			b := f.bindings()
			s := &gatedStore{Store: f.store, gate: gate}
			b.Conversations, b.Snapshots, b.Runs, b.Journal = s, s, s, s
			for range turnsEach {
				for attempt := 0; ; attempt++ {
					if attempt == 50 {
						t.Error("a turn was busy 50 times in a row")
						return
					}
					res, err := f.invoke(ctx, b, a, conv)
					if agents.CodeOf(err) == agents.CodeConversationBusy {
						mu.Lock()
						busy++
						mu.Unlock()
						continue
					}
					if err != nil {
						t.Errorf("turn: %v (code %q)", err, agents.CodeOf(err))
						return
					}
					mu.Lock()
					if other, dup := won[res.TurnNumber]; dup {
						t.Errorf("runs %s and %s both completed turn %d", other, res.RunID, res.TurnNumber)
					}
					won[res.TurnNumber] = res.RunID
					mu.Unlock()
					break
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if busy == 0 {
		t.Fatal("no turn was busy: the first turns of the two stores did not collide")
	}
	t.Logf("%d turns completed, %d invocations were busy and retried", len(won), busy)

	msgs, err := fixtures[1].store.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: turnTenant, ConversationID: conv, Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	users := map[int]string{}
	for _, m := range msgs {
		if m.Role != bindings.RoleUser {
			continue
		}
		if other, dup := users[m.TurnNumber]; dup {
			t.Fatalf("turn %d has two user messages, of runs %s and %s", m.TurnNumber, other, m.RunID)
		}
		users[m.TurnNumber] = m.RunID
	}
	const total = workers * turnsEach
	for n := 1; n <= total; n++ {
		if users[n] == "" || users[n] != won[n] {
			t.Fatalf("turn %d: user message of run %q, completed by run %q; want one run for both", n, users[n], won[n])
		}
	}
	if len(users) != total {
		t.Fatalf("%d turn numbers have user messages, want %d", len(users), total)
	}
	c, err := fixtures[0].store.GetConversation(ctx, turnTenant, conv)
	if err != nil {
		t.Fatal(err)
	}
	if c.TurnCount != total {
		t.Fatalf("TurnCount = %d, want %d", c.TurnCount, total)
	}
}
