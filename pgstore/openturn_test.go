package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/internal/storeio"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// embeddedStore is a value embedding a Store, as a host's wrapper would.
// Bound as the basic bindings with no Journal, the turn drives it through
// journal.Adapt: its reads and writes are the basic calls
// (GetConversation, ReadMessages, AppendStep, …), where the Store bound
// itself is driven by its own Driver.
type embeddedStore struct{ *Store }

// TestTurnOpenerReadsWhatTheCallsItReplacesRead drives the same turns on
// two conversations, one through the Store itself (the turn reads the
// conversation with openTurn and the history with appendUserMessage) and
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
		p := scripted.New(lookupScript(), &scripted.Options{Loop: true})
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
		b.Runs, b.Snapshots, b.Conversations, b.Journal = w, w, w, nil
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
		// The two reads ride with writes, and the user message with the
		// write after it; the wrapper's journal.Adapt makes each call of
		// the basic bindings alone.
		if directTrips[i] != 5 || directTrips[i] >= wrappedTrips[i] {
			t.Errorf("turn %d: %d round trips through the Store, %d through the wrapper; want 5, and fewer", i+1, directTrips[i], wrappedTrips[i])
		}
	}
}

// interjecting is a policy registry that appends a message to a
// conversation on its first call: another writer, between the turn's
// openTurn and its first write.
type interjecting struct {
	once sync.Once
	do   func()
}

func (p *interjecting) Evaluate(context.Context, bindings.PolicyRequest) (bindings.TenantPolicy, error) {
	p.once.Do(p.do)
	return bindings.TenantPolicy{}, nil
}

// TestTurnWhoseConversationChangedSinceOpenTurn drives a turn whose
// conversation gets a message after openTurn read it (from the policy
// registry, during setup), through the Store and through a wrapper
// embedding it: the deferred user message is not stored on the stale
// read (a Commit with CheckCount), the turn appends it as without the read
// ahead, and the model sees the same history — with the interjected
// message — and the journal has the same steps in the same order.
func TestTurnWhoseConversationChangedSinceOpenTurn(t *testing.T) {
	pool, _ := tracedPool(t, 2)
	f := newTurnFixture(t, New(pool, nil))
	a := lookupAgent(t, "")
	type outcome struct {
		messages []bindings.ChatMessage
		steps    []string
		initial  string
		stored   []string
	}
	drive := func(binding func(b *turn.Bindings)) outcome {
		conv := f.open(t, a)
		p := scripted.New(lookupScript(), &scripted.Options{Loop: true})
		b := f.bindings()
		b.Providers = bindings.Providers{p}
		binding(&b)
		if res, err := f.invoke(t.Context(), b, a, conv); err != nil || res.Status != turn.StatusCompleted {
			t.Fatalf("first turn: %+v, %v", res, err)
		}
		b.PolicyRegistry = &interjecting{do: func() {
			if _, err := f.store.AppendMessage(context.Background(), bindings.AppendMessageInput{TenantID: turnTenant, ConversationID: conv, Role: bindings.RoleSystem, Content: "An operator's note."}); err != nil {
				t.Error(err)
			}
		}}
		res, err := f.invoke(t.Context(), b, a, conv)
		if err != nil || res.Status != turn.StatusCompleted || res.TurnNumber != 2 {
			t.Fatalf("second turn: %+v, %v", res, err)
		}
		if len(res.Appended) == 0 || res.Appended[0].Role != bindings.RoleUser || res.Appended[0].Seq == 0 {
			t.Fatalf("second turn appended %+v, want the user message first, with its seq", res.Appended)
		}
		var o outcome
		reqs := p.Requests()
		o.messages = reqs[2].Messages
		journal, err := f.store.ReadJournal(t.Context(), turnTenant, res.RunID)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range journal {
			o.steps = append(o.steps, e.Key+" "+string(e.Status))
			if e.Key == turn.NodeBuildInitialMessages {
				o.initial = string(e.Output)
			}
			if e.Key == turn.NodePersistUserMessage {
				var m bindings.ConversationMessage
				if err := json.Unmarshal(e.Output, &m); err != nil || m.Seq != res.Appended[0].Seq || m.ID != res.Appended[0].ID {
					t.Errorf("persist-user-message output %s, want the stored message %+v", e.Output, res.Appended[0])
				}
			}
		}
		msgs, err := f.store.ReadMessages(t.Context(), bindings.ReadMessagesInput{TenantID: turnTenant, ConversationID: conv, Limit: -1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			o.stored = append(o.stored, string(m.Role)+" "+strconv.FormatInt(m.Seq, 10))
		}
		return o
	}
	direct := drive(func(*turn.Bindings) {})
	wrapped := drive(func(b *turn.Bindings) {
		w := embeddedStore{f.store}
		b.Runs, b.Snapshots, b.Conversations, b.Journal = w, w, w, nil
	})
	if d := cmp.Diff(wrapped, direct, cmp.AllowUnexported(outcome{})); d != "" {
		t.Errorf("the turns differ (-wrapped +direct):\n%s", d)
	}
	if !strings.Contains(direct.initial, "An operator's note.") {
		t.Errorf("build-initial-messages %s lacks the interjected message", direct.initial)
	}
}

// TestTurnOpenerUnderRowLevelSecurity runs openTurn and appendUserMessage
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
	open, err := s.openTurn(ctx, storeio.OpenTurnInput{OpenRunInput: storeio.OpenRunInput{
		Snapshot: bindings.RunSnapshotWriteInput{TenantID: tenant, RunID: "r1", FlowID: "agent.turn", FlowVersion: "1.1.0", ConversationID: "c1"},
		Start:    bindings.StartRunInput{TenantID: tenant, RunID: "r1", FlowID: "agent.turn", FlowVersion: "1.1.0", Owner: "w1", LeaseTTL: 60e9},
	}, HistoryLimit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !open.HasConversation || open.Conversation.MessageCount != 2 || len(open.History) != 2 {
		t.Fatalf("OpenTurn as the app role read conversation %+v (has %v) and history %+v, want c1 with 2 messages", open.Conversation, open.HasConversation, open.History)
	}
	res, err := s.appendUserMessage(ctx, storeio.UserMessageInput{
		Steps:        storeio.AppendStepsInput{TenantID: tenant, RunID: "r1", Owner: "w1", Entries: []bindings.JournalEntry{{Key: "setup", Node: "setup", Status: bindings.StepCompleted}}},
		Message:      bindings.AppendMessageInput{TenantID: tenant, ConversationID: "c1", ID: "r1/persist-user-message", Role: bindings.RoleUser, Content: "now", TurnNumber: 1, RunID: "r1"},
		HistoryLimit: 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.History) != 2 || res.History[0].ID != "m1" || res.History[1].ID != "m2" {
		t.Fatalf("AppendUserMessage as the app role read history %+v, want m1, m2", res.History)
	}
	// The count check sees the tenant's conversation: a stale count is
	// refused, the right one stores the message.
	if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: "r2", FlowID: "agent.turn", FlowVersion: "1.1.0", Owner: "w1", LeaseTTL: 60e9}); err != nil {
		t.Fatal(err)
	}
	step := func(count int) (journal.Committed, error) {
		return s.Commit(ctx, journal.CommitInput{TenantID: tenant, RunID: "r2", Owner: "w1", Entries: []bindings.JournalEntry{
			{Key: "persist-user-message", Node: "persist-user-message", Status: bindings.StepCompleted}},
			Message: &journal.Message{Index: 0, CheckCount: true, Count: count,
				Message: bindings.AppendMessageInput{TenantID: tenant, ConversationID: "c1", ID: "r2/persist-user-message", Role: bindings.RoleUser, Content: "next", TurnNumber: 2, RunID: "r2"}},
		})
	}
	if _, err := step(2); !errors.Is(err, bindings.ErrConversationChanged) {
		t.Fatalf("Commit of a message step on a stale count as the app role: %v, want ErrConversationChanged", err)
	}
	if got, err := step(3); err != nil || got.Message.Seq != 4 {
		t.Fatalf("Commit of a message step as the app role: %+v, %v; want the message stored with seq 4", got.Message, err)
	}
}

// TestConsistentHistory holds openTurn's check that the history read after
// the conversation is as of the conversation's read.
func TestConsistentHistory(t *testing.T) {
	msgs := func(seqs ...int64) []bindings.ConversationMessage {
		var out []bindings.ConversationMessage
		for _, s := range seqs {
			out = append(out, bindings.ConversationMessage{Seq: s})
		}
		return out
	}
	for _, c := range []struct {
		count int
		hist  []bindings.ConversationMessage
		want  bool
	}{
		{0, nil, true},
		{3, msgs(3, 2, 1), true},
		{3, msgs(4, 3, 2), false}, // a message came after the conversation's read
		{1, nil, false},           // the messages went away
		{3, msgs(2, 1), false},
	} {
		if got := consistentHistory(bindings.Conversation{MessageCount: c.count}, c.hist); got != c.want {
			t.Errorf("consistentHistory(count %d, %d messages) = %v, want %v", c.count, len(c.hist), got, c.want)
		}
	}
}

// TestAskOnFirstUseAcrossTurnsWithTheUserMessageDeferred runs two turns of
// an agent whose tool asks for approval on its first use in the
// conversation: the first parks, is approved and resumed; the second —
// whose user message is stored with its first model call's started entry
// (openTurn's read ahead) — finds the earlier use below its user
// message's seq and calls the tool without asking.
func TestAskOnFirstUseAcrossTurnsWithTheUserMessageDeferred(t *testing.T) {
	pool, _ := tracedPool(t, 2)
	s := New(pool, nil)
	f := newTurnFixture(t, s)
	a := lookupAgent(t, agent.GateAskOnFirstUse)
	b := f.bindings()
	hour := time.Hour.Milliseconds()
	b.TenantPolicy = &bindings.TenantPolicy{Hitl: &bindings.HitlSpec{MaxTimeoutMs: &hour, OnTimeout: turn.OnTimeoutDeny}}
	ctx := t.Context()
	conv := f.open(t, a)
	first, err := f.invoke(ctx, b, a, conv)
	if err != nil || first.Status != turn.StatusSuspended || len(first.Approvals) != 1 {
		t.Fatalf("first turn = %+v, %v; want it parked on the first use", first, err)
	}
	if _, err := s.ResolveApproval(ctx, turnTenant, first.Approvals[0].ID, bindings.ApprovalDecision{Approved: true, Reviewer: "rev"}); err != nil {
		t.Fatal(err)
	}
	if res, err := turn.Resume(ctx, turn.ResumeInput{TenantID: turnTenant, RunID: first.RunID, Agent: a}, b); err != nil || res.Status != turn.StatusCompleted {
		t.Fatalf("Resume = %+v, %v", res, err)
	}
	second, err := f.invoke(ctx, b, a, conv)
	if err != nil || second.Status != turn.StatusCompleted || second.Usage.ToolCalls != 1 || len(second.Approvals) != 0 {
		t.Fatalf("second turn = %+v, %v; want it completed with the tool called, unasked", second, err)
	}
	if second.Appended[0].Seq == 0 || second.TurnNumber != 2 {
		t.Fatalf("second turn's user message %+v (turn %d), want it stored", second.Appended[0], second.TurnNumber)
	}
}
