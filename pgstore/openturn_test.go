package pgstore

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/journaltest"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// embeddedStore is a value embedding a Store, as a host's wrapper would:
// it promotes the Store's TurnOpener, which the turn must not use (its
// TurnOpenerStore is the inner Store), so its reads go through the
// wrapper's own GetConversation and ReadMessages. It offers the Store's
// MessageStepAppender as its own, so that the turn's writes are those of
// the Store itself.
type embeddedStore struct{ *Store }

// MessageStepStore is the wrapper itself.
func (w embeddedStore) MessageStepStore() bindings.RunBinding { return w }

// TestTurnOpenerReadsWhatTheCallsItReplacesRead drives the same turns on
// two conversations, one through the Store itself (the turn reads the
// conversation with OpenTurn and the history with AppendUserMessage) and
// one through a wrapper embedding it (GetConversation and ReadMessages),
// with a history window shorter than the conversation: the model gets the
// same messages, and only the first takes fewer round trips.
func TestTurnOpenerReadsWhatTheCallsItReplacesRead(t *testing.T) {
	pool, rt := tracedPool(t, 1)
	f := newTurnFixture(t, New(pool, nil))
	limit := 3
	a, err := agent.Define(agent.Spec{
		ID: "acme.lookup-agent", Version: "1.0.0", Name: "Lookup", Instructions: "You look things up.",
		Capabilities:       []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		Tools:              []agent.ToolRef{{ID: "acme.lookup", Version: "^1.0.0"}},
		ConversationPolicy: &agent.ConversationPolicy{HistoryLimit: &limit},
	})
	if err != nil {
		t.Fatal(err)
	}
	drive := func(binding func(b *turn.Bindings)) (requests []bindings.GenerateRequest, roundTrips []int) {
		conv := f.open(t, a)
		p := scripted.New([]scripted.Response{
			scripted.Call("call_1", "acme.lookup", map[string]any{"q": "answer"}),
			scripted.Say("The answer is 42."),
		}, &scripted.Options{Loop: true})
		b := f.bindings()
		b.Providers = bindings.Providers{p}
		binding(&b)
		for range 3 {
			rt.reset()
			res, err := f.invoke(t.Context(), b, a, conv)
			if err != nil || res.Status != turn.StatusCompleted {
				t.Fatalf("turn: %+v, %v", res, err)
			}
			_, batches, _, _ := rt.snapshot()
			roundTrips = append(roundTrips, batches)
		}
		return p.Requests(), roundTrips
	}
	direct, directTrips := drive(func(*turn.Bindings) {})
	wrapped, wrappedTrips := drive(func(b *turn.Bindings) {
		w := embeddedStore{f.store}
		b.Runs, b.Snapshots, b.Conversations = w, w, w
	})
	if len(direct) != 6 || len(wrapped) != 6 {
		t.Fatalf("%d and %d model requests, want 6 each", len(direct), len(wrapped))
	}
	for i := range direct {
		if d := cmp.Diff(wrapped[i].Messages, direct[i].Messages); d != "" {
			t.Errorf("model request %d: messages differ (-wrapped +direct):\n%s", i, d)
		}
	}
	if n := len(direct[4].Messages); n != 1+limit+1 {
		t.Errorf("the third turn's first request has %d messages, want the system prompt, %d of history and the user message", n, limit)
	}
	for i := range directTrips {
		if directTrips[i] != wrappedTrips[i]-2 {
			t.Errorf("turn %d: %d round trips through the Store, %d through the wrapper; want 2 fewer", i+1, directTrips[i], wrappedTrips[i])
		}
	}
}

// TestCrashStoreIsATurnOpener checks that journaltest's crash store offers
// the Store's TurnOpener as itself, so the crash tests crash at its calls.
func TestCrashStoreIsATurnOpener(t *testing.T) {
	s := New(testPool(t), nil)
	one := journaltest.New(-1, false).Store(s)
	to, ok := one.(bindings.TurnOpener)
	if !ok {
		t.Fatalf("%T is not a bindings.TurnOpener", one)
	}
	if any(to.TurnOpenerStore()) != any(one) {
		t.Fatalf("TurnOpenerStore() is %T, want the crash store itself", to.TurnOpenerStore())
	}
	if ms, ok := one.(bindings.MessageStepAppender); !ok || any(ms.MessageStepStore()) != any(one) {
		t.Fatalf("%T: MessageStepStore is not the crash store itself", one)
	}
}

// TestTurnOpenerUnderRowLevelSecurity runs OpenTurn and AppendUserMessage
// as a role that does not bypass row-level security: their reads see the
// tenant's rows (the tenant set by the functions before them).
func TestTurnOpenerUnderRowLevelSecurity(t *testing.T) {
	app, _ := appRolePool(t)
	ctx := t.Context()
	s := New(app, nil)
	tenant := "rls-turnopen-" + randomID()[:8]
	if _, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, ID: "c1", AgentID: "acme.agent", AgentVersion: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"m1", "m2"} {
		if _, err := s.AppendMessage(ctx, bindings.AppendMessageInput{TenantID: tenant, ConversationID: "c1", ID: id, Role: bindings.RoleUser, Content: id}); err != nil {
			t.Fatal(err)
		}
	}
	open, err := s.OpenTurn(ctx, bindings.OpenRunInput{
		Snapshot: bindings.RunSnapshotWriteInput{TenantID: tenant, RunID: "r1", FlowID: "agent.turn", FlowVersion: "1.1.0", ConversationID: "c1"},
		Start:    bindings.StartRunInput{TenantID: tenant, RunID: "r1", FlowID: "agent.turn", FlowVersion: "1.1.0", Owner: "w1", LeaseTTL: 60e9},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !open.HasConversation || open.Conversation.MessageCount != 2 {
		t.Fatalf("OpenTurn as the app role read conversation %+v (has %v), want c1 with 2 messages", open.Conversation, open.HasConversation)
	}
	res, err := s.AppendUserMessage(ctx, bindings.UserMessageInput{
		Steps:        bindings.AppendStepsInput{TenantID: tenant, RunID: "r1", Owner: "w1", Entries: []bindings.JournalEntry{{Key: "setup", Node: "setup", Status: bindings.StepCompleted}}},
		Message:      bindings.AppendMessageInput{TenantID: tenant, ConversationID: "c1", ID: "r1/persist-user-message", Role: bindings.RoleUser, Content: "now", TurnNumber: 1, RunID: "r1"},
		HistoryLimit: 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.History) != 2 || res.History[0].ID != "m1" || res.History[1].ID != "m2" {
		t.Fatalf("AppendUserMessage as the app role read history %+v, want m1, m2", res.History)
	}
}
