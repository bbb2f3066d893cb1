package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// TestTurnRunIDOfAnotherConversation: on PostgreSQL, an Invoke with the run
// id of a turn of another conversation is run-input-mismatch, storing and
// calling nothing; the same input replays the stored answer.
func TestTurnRunIDOfAnotherConversation(t *testing.T) {
	f := newTurnFixture(t, New(testPool(t), nil))
	a := lookupAgent(t, "")
	p := scripted.New([]scripted.Response{scripted.Say("Answer for user A.")}, nil)
	b := f.bindings()
	b.Providers = bindings.Providers{p}
	convA, convB := f.open(t, a), f.open(t, a)
	in := turn.Input{TenantID: turnTenant, Agent: a, ConversationID: convA, UserMessage: "What is my balance?", RunID: "idem-" + t.Name()}
	first, err := turn.Invoke(t.Context(), in, b)
	if err != nil {
		t.Fatal(err)
	}
	other := in
	other.ConversationID, other.UserMessage = convB, "What is my address?"
	res, err := turn.Invoke(t.Context(), other, b)
	var mm *agents.RunInputMismatchError
	if !errors.As(err, &mm) || mm.Field != "conversationId" || res.Response.Content != "" {
		t.Fatalf("Invoke from another conversation: %+v, %v; want run-input-mismatch", res.Response, err)
	}
	msgs, err := f.store.ReadMessages(t.Context(), bindings.ReadMessagesInput{TenantID: turnTenant, ConversationID: convB, Limit: -1})
	if err != nil || len(msgs) != 0 {
		t.Errorf("conversation B holds %d messages (%v)", len(msgs), err)
	}
	replay, err := turn.Invoke(t.Context(), in, b)
	if err != nil || replay.Response.Content != first.Response.Content || replay.Response.MessageID != first.Response.MessageID || p.Calls() != 1 {
		t.Errorf("replay: %+v, %v after %d model calls", replay.Response, err, p.Calls())
	}
}

// TestTurnNonFiniteCostIsFinal: a NaN cost fails the run on PostgreSQL
// with model-invocation-failed (nothing unencodable reaches the journal),
// and a Resume calls nothing.
func TestTurnNonFiniteCostIsFinal(t *testing.T) {
	f := newTurnFixture(t, New(testPool(t), nil))
	a := lookupAgent(t, "")
	r := scripted.Say("Priceless.")
	r.Usage.CostUsd = math.NaN()
	p := scripted.New([]scripted.Response{r, r}, nil)
	b := f.bindings()
	b.Providers = bindings.Providers{p}
	in := turn.Input{TenantID: turnTenant, Agent: a, ConversationID: f.open(t, a), UserMessage: "Hi", RunID: "nan-" + t.Name()}
	if _, err := turn.Invoke(t.Context(), in, b); agents.CodeOf(err) != agents.CodeModelInvocationFailed || agents.IsRetryable(err) {
		t.Fatalf("Invoke: %v, want a final model-invocation-failed", err)
	}
	_, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: turnTenant, RunID: in.RunID, Agent: a}, b)
	if agents.CodeOf(err) != agents.CodeModelInvocationFailed || p.Calls() != 1 {
		t.Errorf("Resume: %v after %d model calls", err, p.Calls())
	}
	if run, err := f.store.GetRun(t.Context(), turnTenant, in.RunID); err != nil || run.Status != bindings.RunFailed {
		t.Errorf("run %+v, %v: want failed", run.Status, err)
	}
}

// TestTurnThousandToolCallsAndLongIDs: on PostgreSQL, a response with 1,000
// tool calls, one of them with a 9,000-character id, runs the first
// DefaultMaxToolCallsPerResponse calls, stores valid ids only and
// completes.
func TestTurnThousandToolCallsAndLongIDs(t *testing.T) {
	f := newTurnFixture(t, New(testPool(t), nil))
	a := lookupAgent(t, "")
	calls := make([]bindings.ToolCall, 1000)
	for i := range calls {
		calls[i] = scripted.ToolCall("c"+strings.Repeat("9", i%7), "acme.lookup", map[string]any{"q": "x"})
	}
	calls[0].ID = strings.Repeat("i", 9000)
	p := scripted.New([]scripted.Response{{ToolCalls: calls}, scripted.Say("Done.")}, nil)
	b := f.bindings()
	b.Providers = bindings.Providers{p}
	conv := f.open(t, a)
	start := time.Now()
	res, err := turn.Invoke(context.Background(), turn.Input{TenantID: turnTenant, Agent: a, ConversationID: conv, UserMessage: "Look up a lot."}, b)
	if err != nil || res.Status != turn.StatusCompleted {
		t.Fatalf("Invoke: %+v, %v", res.Status, err)
	}
	t.Logf("a turn with 1,000 tool calls in one response: %v", time.Since(start))
	if n := f.executed.Load(); n != turn.DefaultMaxToolCallsPerResponse {
		t.Errorf("the tool ran %d times, want %d", n, turn.DefaultMaxToolCallsPerResponse)
	}
	msgs, err := f.store.ReadMessages(t.Context(), bindings.ReadMessagesInput{TenantID: turnTenant, ConversationID: conv, Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if len(c.ID) > turn.MaxToolCallIDLength {
				t.Errorf("a stored call id of %d bytes", len(c.ID))
			}
		}
		if err := bindings.CheckID("message id", m.ID); err != nil {
			t.Error(err)
		}
	}
}

// TestTurnRecurringFailureEnds: on PostgreSQL, the case — a tool
// output holding NUL, which jsonb refuses (22P05) unless the store escapes
// it — never makes the tool run on every drive: the turn completes (the
// store holds it) or the run ends, failed, after at most
// DefaultMaxStepAttempts runs of the tool, with IsRetryable false.
func TestTurnRecurringFailureEnds(t *testing.T) {
	s := New(testPool(t), nil)
	f := newTurnFixture(t, s)
	var runs atomic.Int64
	err := f.tools.Add(turnTenant, bindings.ToolDescriptor{ID: "acme.lookup", Version: "1.0.1", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
			runs.Add(1)
			return json.RawMessage(`{"answer":"4\u00002"}`), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	a := lookupAgent(t, "")
	b := f.bindings()
	in := turn.Input{TenantID: turnTenant, Agent: a, ConversationID: f.open(t, a), UserMessage: "What is the answer?", RunID: "nul-" + t.Name()}
	_, err = turn.Invoke(t.Context(), in, b)
	drives := 1
	for ; agents.IsRetryable(err) && drives < 20; drives++ {
		_, err = turn.Resume(t.Context(), turn.ResumeInput{TenantID: turnTenant, RunID: in.RunID, Agent: a}, b)
	}
	if agents.IsRetryable(err) {
		t.Fatalf("still retryable after %d drives: %v", drives, err)
	}
	if n := runs.Load(); n > turn.DefaultMaxStepAttempts {
		t.Errorf("the tool ran %d times, want at most %d", n, turn.DefaultMaxStepAttempts)
	}
	run, gerr := s.GetRun(t.Context(), turnTenant, in.RunID)
	if gerr != nil || !run.Status.Terminal() {
		t.Errorf("run %+v, %v: want it finished", run.Status, gerr)
	}
	t.Logf("after %d drives and %d tool runs: %v (run %s)", drives, runs.Load(), err, run.Status)
}

// refusingTurnStore is a Store that refuses every journal write carrying an
// entry refuse matches, with err, on every drive.
type refusingTurnStore struct {
	*Store
	refuse func(bindings.JournalEntry) bool
	err    error
}

func (s *refusingTurnStore) refused(es ...bindings.JournalEntry) bool {
	for _, e := range es {
		if s.refuse(e) {
			return true
		}
	}
	return false
}

func (s *refusingTurnStore) AppendStep(ctx context.Context, in bindings.AppendStepInput) (bindings.JournalEntry, bool, error) {
	if s.refused(in.Entry) {
		return bindings.JournalEntry{}, false, s.err
	}
	return s.Store.AppendStep(ctx, in)
}

func (s *refusingTurnStore) Commit(ctx context.Context, in journal.CommitInput) (journal.Committed, error) {
	if s.refused(in.Entries...) {
		return journal.Committed{}, s.err
	}
	return s.Store.Commit(ctx, in)
}

// TestTurnStepAttemptsHoldAcrossStores: on PostgreSQL, a model call whose
// result the store refuses transiently on every drive, each drive from a
// new Store (another process), is called DefaultMaxStepAttempts times, then
// the run fails with step-attempts-exhausted.
func TestTurnStepAttemptsHoldAcrossStores(t *testing.T) {
	pool := testPool(t)
	f := newTurnFixture(t, New(pool, nil))
	a := lookupAgent(t, "")
	p := scripted.New([]scripted.Response{scripted.Say("Refused.")}, &scripted.Options{Loop: true})
	conv := f.open(t, a)
	in := turn.Input{TenantID: turnTenant, Agent: a, ConversationID: conv, UserMessage: "Hi", RunID: "attempts-" + t.Name()}
	process := func() turn.Bindings {
		s := &refusingTurnStore{Store: New(pool, nil), err: &agents.PersistenceError{Op: "append", Err: errors.New("connection reset by peer")},
			refuse: func(e bindings.JournalEntry) bool {
				return e.Key == "agent-loop/1/model-call" && e.Status == bindings.StepCompleted
			}}
		b := f.bindings()
		b.Providers = bindings.Providers{p}
		b.Runs, b.Snapshots, b.Conversations, b.Journal = s, s, s, s
		return b
	}
	_, err := turn.Invoke(t.Context(), in, process())
	drives := 1
	for ; agents.IsRetryable(err) && drives < 20; drives++ {
		_, err = turn.Resume(t.Context(), turn.ResumeInput{TenantID: turnTenant, RunID: in.RunID, Agent: a}, process())
	}
	var ex *agents.StepAttemptsExhaustedError
	if !errors.As(err, &ex) || agents.IsRetryable(err) {
		t.Fatalf("after %d drives: %v, want step-attempts-exhausted", drives, err)
	}
	if p.Calls() != turn.DefaultMaxStepAttempts {
		t.Errorf("%d model calls, want %d", p.Calls(), turn.DefaultMaxStepAttempts)
	}
	if run, err := f.store.GetRun(t.Context(), turnTenant, in.RunID); err != nil || run.Status != bindings.RunFailed {
		t.Errorf("run %+v, %v: want failed", run.Status, err)
	}
}
