package pgstore

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/bindingstest"
)

// trustedOf is the trusted journal of s with the capabilities the turn
// looks for on it.
func trustedOf(t *testing.T, s *Store) (bindings.StepBatcher, bindings.RunFinisher, bindings.StepMessageAppender, bindings.MessageStepAppender) {
	t.Helper()
	j, of := s.TrustedJournal()
	if of != bindings.RunBinding(s) {
		t.Fatalf("TrustedJournal names %v as its binding, want the store", of)
	}
	f, ok1 := j.(bindings.RunFinisher)
	m, ok2 := j.(bindings.StepMessageAppender)
	ms, ok3 := j.(bindings.MessageStepAppender)
	if !ok1 || !ok2 || !ok3 || ms.MessageStepStore() != bindings.RunBinding(s) {
		t.Fatalf("the trusted journal is a RunFinisher %v, a StepMessageAppender %v, a MessageStepAppender of the store %v", ok1, ok2, ok3)
	}
	if c, ok := j.(bindings.OutputCopier); !ok || !c.CopiesOutputs() {
		t.Fatal("the trusted journal does not say it copies outputs")
	}
	return j, f, m, ms
}

// TestTrustedJournalWritesAsTheStore: each write of the trusted journal
// returns and stores what the Store's own method returns and stores for
// the same input (on another run and conversation of the tenant).
func TestTrustedJournalWritesAsTheStore(t *testing.T) {
	ctx := context.Background()
	clock := bindingstest.NewClock(bindingstest.DefaultStart)
	s := New(testPool(t), &Options{Now: clock.Now})
	tenant := "trusted-" + randomID()
	batcher, finisher, appender, stepper := trustedOf(t, s)
	type result struct {
		Entries  []bindings.JournalEntry
		Appended []bool
		Message  bindings.ConversationMessage
		Journal  []bindings.JournalEntry
		History  []bindings.ConversationMessage
	}
	run := func(trusted bool) result {
		run := "own"
		var b bindings.StepBatcher = s
		var f bindings.RunFinisher = s
		var a bindings.StepMessageAppender = s
		var ms bindings.MessageStepAppender = s
		if trusted {
			run, b, f, a, ms = "trusted", batcher, finisher, appender, stepper
		}
		if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: run, FlowID: "f", FlowVersion: "1", Owner: "o", LeaseTTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		conv, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, ID: "c-" + run, AgentID: "a", AgentVersion: "1"})
		if err != nil {
			t.Fatal(err)
		}
		steps := func(entries ...bindings.JournalEntry) bindings.AppendStepsInput {
			return bindings.AppendStepsInput{TenantID: tenant, RunID: run, Owner: "o", Entries: entries}
		}
		var r result
		add := func(e []bindings.JournalEntry, ap []bool, err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			r.Entries, r.Appended = append(r.Entries, e...), append(r.Appended, ap...)
		}
		add(b.AppendSteps(ctx, steps(
			bindings.JournalEntry{Key: "a", Node: "n", Status: bindings.StepCompleted, Output: json.RawMessage(`{ "spaced" : [1, 2] }`)},
			bindings.JournalEntry{Key: "b", Node: "n", Status: bindings.StepFailed, Error: &bindings.StepError{Code: "x", Message: "no"}},
			bindings.JournalEntry{Key: "c", Node: "n", Status: bindings.StepStarted, Output: json.RawMessage(`"\u0000"`)})))
		add(b.AppendSteps(ctx, steps(bindings.JournalEntry{Key: "a", Node: "n", Status: bindings.StepCompleted, Output: json.RawMessage(`2`)})))
		e, ap, m, err := a.AppendStepsAndMessage(ctx, steps(bindings.JournalEntry{Key: "d", Status: bindings.StepCompleted, Output: json.RawMessage(`{}`)}),
			bindings.AppendMessageInput{TenantID: tenant, ConversationID: conv.ID, ID: "m1-" + run, Role: bindings.RoleAgent, RunID: run, TurnNumber: 1,
				ToolCalls: []bindings.ToolCall{{ID: "c1", Name: "t", Arguments: json.RawMessage(`{"q": "x"}`)}}, Metadata: json.RawMessage(`{"k": 1}`)})
		add(e, ap, err)
		r.Message = m
		res, err := ms.AppendMessageStep(ctx, bindings.MessageStepInput{Steps: steps(
			bindings.JournalEntry{Key: "e", Status: bindings.StepCompleted, Output: json.RawMessage(`{"r":1}`)},
			bindings.JournalEntry{Key: "msg", Status: bindings.StepCompleted},
			bindings.JournalEntry{Key: "f", Status: bindings.StepStarted}), StepIndex: 1,
			Message: bindings.AppendMessageInput{TenantID: tenant, ConversationID: conv.ID, ID: "m2-" + run, Role: bindings.RoleTool, Content: "42", ToolCallID: "c1", RunID: run, TurnNumber: 1}})
		add(res.Entries, res.Appended, err)
		add(f.FinishRun(ctx, bindings.FinishRunInput{TenantID: tenant, RunID: run, Owner: "o", Status: bindings.RunCompleted,
			Entries: []bindings.JournalEntry{{Key: "g", Status: bindings.StepCompleted, Output: json.RawMessage(`{"done":true}`)}}}))
		if r.Journal, err = s.ReadJournal(ctx, tenant, run); err != nil {
			t.Fatal(err)
		}
		if r.History, err = s.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: tenant, ConversationID: conv.ID, Limit: 10}); err != nil {
			t.Fatal(err)
		}
		// What differs by construction: the run, the conversation and the
		// message ids.
		for i := range r.History {
			r.History[i].ConversationID, r.History[i].RunID, r.History[i].ID = "", "", ""
		}
		r.Message.ConversationID, r.Message.RunID, r.Message.ID = "", "", ""
		for _, es := range [][]bindings.JournalEntry{r.Entries, r.Journal} {
			for i := range es {
				es[i].Seq, es[i].Output = 0, normalizeIDs(es[i].Output, run)
			}
		}
		return r
	}
	own, trusted := run(false), run(true)
	if !reflect.DeepEqual(own, trusted) {
		t.Fatalf("the Store's methods:\n%+v\nthe trusted journal's:\n%+v", own, trusted)
	}
}

// normalizeIDs replaces the ids that name run in a message step's output.
func normalizeIDs(doc json.RawMessage, run string) json.RawMessage {
	var v map[string]any
	if json.Unmarshal(doc, &v) != nil || v == nil {
		return doc
	}
	for _, k := range []string{"id", "conversationId", "runId"} {
		if _, ok := v[k]; ok {
			v[k] = "x"
		}
	}
	out, _ := json.Marshal(v)
	return out
}

// TestTrustedJournalChecksWhatIsNotVouched: the trusted journal still
// refuses what depends on the stored state or is not vouched for: another
// owner's lease, a missing run, an unknown run status or role, a message
// with neither content nor tool calls, a closed conversation.
func TestTrustedJournalChecksWhatIsNotVouched(t *testing.T) {
	ctx := context.Background()
	s := New(testPool(t), nil)
	tenant := "trusted-" + randomID()
	batcher, finisher, appender, stepper := trustedOf(t, s)
	if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: "r", FlowID: "f", FlowVersion: "1", Owner: "o", LeaseTTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	conv, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, AgentID: "a", AgentVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	e := []bindings.JournalEntry{{Key: "k", Node: "n", Status: bindings.StepCompleted, Output: json.RawMessage(`{"a":1}`)}}
	in := bindings.AppendStepsInput{TenantID: tenant, RunID: "r", Owner: "o", Entries: e}
	if _, _, err := batcher.AppendSteps(ctx, bindings.AppendStepsInput{TenantID: tenant, RunID: "r", Owner: "other", Entries: e}); agents.CodeOf(err) != agents.CodeRunBusy {
		t.Errorf("another owner: %v, want run-busy", err)
	}
	if _, _, err := batcher.AppendSteps(ctx, bindings.AppendStepsInput{TenantID: tenant, RunID: "nope", Entries: e}); agents.CodeOf(err) != agents.CodeRunJournalUnavailable {
		t.Errorf("missing run: %v, want run-journal-unavailable", err)
	}
	if _, _, err := finisher.FinishRun(ctx, bindings.FinishRunInput{TenantID: tenant, RunID: "r", Owner: "o", Entries: e, Status: "done"}); agents.CodeOf(err) != agents.CodeInvalidMessage {
		t.Errorf("unknown run status: %v, want invalid-message", err)
	}
	m := bindings.AppendMessageInput{TenantID: tenant, ConversationID: conv.ID, ID: "m", Role: "robot", Content: "hi"}
	if _, _, _, err := appender.AppendStepsAndMessage(ctx, in, m); agents.CodeOf(err) != agents.CodeInvalidMessage {
		t.Errorf("unknown role: %v, want invalid-message", err)
	}
	m.Role, m.Content = bindings.RoleUser, ""
	step := bindings.MessageStepInput{Steps: bindings.AppendStepsInput{TenantID: tenant, RunID: "r", Owner: "o",
		Entries: []bindings.JournalEntry{{Key: "msg", Status: bindings.StepCompleted}}}, Message: m}
	if _, err := stepper.AppendMessageStep(ctx, step); agents.CodeOf(err) != agents.CodeInvalidMessage {
		t.Errorf("neither content nor tool calls: %v, want invalid-message", err)
	}
	if j, _ := s.ReadJournal(ctx, tenant, "r"); len(j) != 0 {
		t.Fatalf("%d entries stored by refused calls", len(j))
	}
	if err := s.CloseConversation(ctx, tenant, conv.ID); err != nil {
		t.Fatal(err)
	}
	step.Message.Content = "hi"
	if _, err := stepper.AppendMessageStep(ctx, step); agents.CodeOf(err) != agents.CodeConversationClosed {
		t.Errorf("closed conversation: %v, want conversation-closed", err)
	}
}

// TestTrustedJournalUpdatesTheInputInPlace: the trusted journal returns
// the caller's own entries, each updated to the entry stored (what
// bindings.TrustedJournal allows); the Store's own methods leave the
// input as it was.
func TestTrustedJournalUpdatesTheInputInPlace(t *testing.T) {
	ctx := context.Background()
	s := New(testPool(t), nil)
	tenant := "trusted-" + randomID()
	batcher, _, _, stepper := trustedOf(t, s)
	if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: "r", FlowID: "f", FlowVersion: "1", Owner: "o", LeaseTTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	conv, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, AgentID: "a", AgentVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	own := []bindings.JournalEntry{{Key: "own", Status: bindings.StepCompleted, Output: json.RawMessage(`{"a": 1}`)}}
	if _, _, err := s.AppendSteps(ctx, bindings.AppendStepsInput{TenantID: tenant, RunID: "r", Owner: "o", Entries: own}); err != nil {
		t.Fatal(err)
	}
	if own[0].Seq != 0 || string(own[0].Output) != `{"a": 1}` {
		t.Fatalf("the Store's AppendSteps changed its input: %+v", own[0])
	}
	in := []bindings.JournalEntry{{Key: "a", Status: bindings.StepCompleted, Output: json.RawMessage(`{"a": 1}`)}, {Key: "own", Status: bindings.StepCompleted, Output: json.RawMessage(`2`)}}
	got, appended, err := batcher.AppendSteps(ctx, bindings.AppendStepsInput{TenantID: tenant, RunID: "r", Owner: "o", Entries: in})
	if err != nil || &got[0] != &in[0] || in[0].Seq != 2 || string(in[0].Output) != `{"a":1}` || in[0].At.IsZero() || !appended[0] {
		t.Fatalf("trusted AppendSteps = %+v %v, %v (input %+v)", got, appended, err, in)
	}
	if appended[1] || in[1].Seq != 1 || string(in[1].Output) != `{"a":1}` {
		t.Fatalf("the entry stored before: %+v, appended %v", in[1], appended[1])
	}
	steps := []bindings.JournalEntry{{Key: "b", Status: bindings.StepCompleted}, {Key: "msg", Status: bindings.StepCompleted}, {Key: "c", Status: bindings.StepStarted}}
	res, err := stepper.AppendMessageStep(ctx, bindings.MessageStepInput{StepIndex: 1,
		Steps:   bindings.AppendStepsInput{TenantID: tenant, RunID: "r", Owner: "o", Entries: steps},
		Message: bindings.AppendMessageInput{TenantID: tenant, ConversationID: conv.ID, ID: "m", Role: bindings.RoleUser, Content: "hi"}})
	if err != nil || len(res.Entries) != 3 || &res.Entries[0] != &steps[0] || steps[0].Seq <= 2 || steps[1].Seq <= steps[0].Seq || steps[2].Seq <= steps[1].Seq {
		t.Fatalf("trusted AppendMessageStep = %+v, %v (input %+v)", res, err, steps)
	}
	var step struct{ Seq int64 }
	if err := json.Unmarshal(steps[1].Output, &step); err != nil || step.Seq != res.Message.Seq || step.Seq == 0 {
		t.Fatalf("the message step's output %s, message seq %d", steps[1].Output, res.Message.Seq)
	}
}
