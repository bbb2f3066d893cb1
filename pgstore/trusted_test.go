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
	"github.com/kindgi/agents/bindings/journal"
)

// commitOf commits through s's Driver with Trusted set to trusted and
// returns the entries, the flags and the message stored.
func commitOf(ctx context.Context, s *Store, trusted bool, in journal.CommitInput) ([]bindings.JournalEntry, []bool, bindings.ConversationMessage, error) {
	in.Trusted = trusted
	res, err := s.Commit(ctx, in)
	return res.Entries, res.Appended, res.Message, err
}

// TestTrustedCommitWritesAsAnUntrustedOne: each Trusted Commit returns and
// stores what the same Commit untrusted returns and stores for the same
// input (on another run and conversation of the tenant).
func TestTrustedCommitWritesAsAnUntrustedOne(t *testing.T) {
	ctx := context.Background()
	clock := bindingstest.NewClock(bindingstest.DefaultStart)
	s := New(testPool(t), &Options{Now: clock.Now})
	tenant := "trusted-" + randomID()
	type result struct {
		Entries  []bindings.JournalEntry
		Appended []bool
		Message  bindings.ConversationMessage
		Journal  []bindings.JournalEntry
		History  []bindings.ConversationMessage
	}
	run := func(trusted bool) result {
		run := "own"
		if trusted {
			run = "trusted"
		}
		if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: run, FlowID: "f", FlowVersion: "1", Owner: "o", LeaseTTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		conv, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, ID: "c-" + run, AgentID: "a", AgentVersion: "1"})
		if err != nil {
			t.Fatal(err)
		}
		steps := func(entries ...bindings.JournalEntry) journal.CommitInput {
			return journal.CommitInput{TenantID: tenant, RunID: run, Owner: "o", Entries: entries}
		}
		commit := func(in journal.CommitInput) ([]bindings.JournalEntry, []bool, error) {
			e, ap, _, err := commitOf(ctx, s, trusted, in)
			return e, ap, err
		}
		var r result
		add := func(e []bindings.JournalEntry, ap []bool, err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			r.Entries, r.Appended = append(r.Entries, e...), append(r.Appended, ap...)
		}
		add(commit(steps(
			bindings.JournalEntry{Key: "a", Node: "n", Status: bindings.StepCompleted, Output: json.RawMessage(`{ "spaced" : [1, 2] }`)},
			bindings.JournalEntry{Key: "b", Node: "n", Status: bindings.StepFailed, Error: &bindings.StepError{Code: "x", Message: "no"}},
			bindings.JournalEntry{Key: "c", Node: "n", Status: bindings.StepStarted, Output: json.RawMessage(`"\u0000"`)})))
		add(commit(steps(bindings.JournalEntry{Key: "a", Node: "n", Status: bindings.StepCompleted, Output: json.RawMessage(`2`)})))
		bare := steps(bindings.JournalEntry{Key: "d", Status: bindings.StepCompleted, Output: json.RawMessage(`{}`)})
		bare.Message = &journal.Message{Index: 1, Message: bindings.AppendMessageInput{TenantID: tenant, ConversationID: conv.ID, ID: "m1-" + run, Role: bindings.RoleAgent, RunID: run, TurnNumber: 1,
			ToolCalls: []bindings.ToolCall{{ID: "c1", Name: "t", Arguments: json.RawMessage(`{"q": "x"}`)}}, Metadata: json.RawMessage(`{"k": 1}`)}}
		e, ap, m, err := commitOf(ctx, s, trusted, bare)
		add(e, ap, err)
		r.Message = m
		step := steps(
			bindings.JournalEntry{Key: "e", Status: bindings.StepCompleted, Output: json.RawMessage(`{"r":1}`)},
			bindings.JournalEntry{Key: "msg", Status: bindings.StepCompleted},
			bindings.JournalEntry{Key: "f", Status: bindings.StepStarted})
		step.Message = &journal.Message{Index: 1, Message: bindings.AppendMessageInput{TenantID: tenant, ConversationID: conv.ID, ID: "m2-" + run, Role: bindings.RoleTool, Content: "42", ToolCallID: "c1", RunID: run, TurnNumber: 1}}
		add(commit(step))
		fin := steps(bindings.JournalEntry{Key: "g", Status: bindings.StepCompleted, Output: json.RawMessage(`{"done":true}`)})
		fin.Finish = bindings.RunCompleted
		add(commit(fin))
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
		t.Fatalf("untrusted commits:\n%+v\ntrusted ones:\n%+v", own, trusted)
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

// trustedRun is a Store with, in a fresh tenant, the run "r" leased to
// "o" and an open conversation.
func trustedRun(t *testing.T) (*Store, string, bindings.Conversation) {
	t.Helper()
	ctx := context.Background()
	s := New(testPool(t), nil)
	tenant := "trusted-" + randomID()
	if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: "r", FlowID: "f", FlowVersion: "1", Owner: "o", LeaseTTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	conv, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, AgentID: "a", AgentVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	return s, tenant, conv
}

// TestTrustedJournalChecksWhatIsNotVouched: a Trusted Commit still
// refuses what depends on the stored state or is not vouched for: another
// owner's lease, a missing run, an unknown run status or role, a message
// with neither content nor tool calls, a closed conversation.
func TestTrustedJournalChecksWhatIsNotVouched(t *testing.T) {
	ctx := context.Background()
	s, tenant, conv := trustedRun(t)
	e := []bindings.JournalEntry{{Key: "k", Node: "n", Status: bindings.StepCompleted, Output: json.RawMessage(`{"a":1}`)}}
	in := journal.CommitInput{TenantID: tenant, RunID: "r", Owner: "o", Entries: e}
	if _, _, _, err := commitOf(ctx, s, true, journal.CommitInput{TenantID: tenant, RunID: "r", Owner: "other", Entries: e}); agents.CodeOf(err) != agents.CodeRunBusy {
		t.Errorf("another owner: %v, want run-busy", err)
	}
	if _, _, _, err := commitOf(ctx, s, true, journal.CommitInput{TenantID: tenant, RunID: "nope", Entries: e}); agents.CodeOf(err) != agents.CodeRunJournalUnavailable {
		t.Errorf("missing run: %v, want run-journal-unavailable", err)
	}
	if _, _, _, err := commitOf(ctx, s, true, journal.CommitInput{TenantID: tenant, RunID: "r", Owner: "o", Entries: e, Finish: "done"}); agents.CodeOf(err) != agents.CodeInvalidMessage {
		t.Errorf("unknown run status: %v, want invalid-message", err)
	}
	m := bindings.AppendMessageInput{TenantID: tenant, ConversationID: conv.ID, ID: "m", Role: "robot", Content: "hi"}
	in.Message = &journal.Message{Index: 1, Message: m}
	if _, _, _, err := commitOf(ctx, s, true, in); agents.CodeOf(err) != agents.CodeInvalidMessage {
		t.Errorf("unknown role: %v, want invalid-message", err)
	}
	m.Role, m.Content = bindings.RoleUser, ""
	step := journal.CommitInput{TenantID: tenant, RunID: "r", Owner: "o",
		Entries: []bindings.JournalEntry{{Key: "msg", Status: bindings.StepCompleted}}, Message: &journal.Message{Message: m}}
	if _, _, _, err := commitOf(ctx, s, true, step); agents.CodeOf(err) != agents.CodeInvalidMessage {
		t.Errorf("neither content nor tool calls: %v, want invalid-message", err)
	}
	if j, _ := s.ReadJournal(ctx, tenant, "r"); len(j) != 0 {
		t.Fatalf("%d entries stored by refused calls", len(j))
	}
	if err := s.CloseConversation(ctx, tenant, conv.ID); err != nil {
		t.Fatal(err)
	}
	step.Message.Message.Content = "hi"
	if _, _, _, err := commitOf(ctx, s, true, step); agents.CodeOf(err) != agents.CodeConversationClosed {
		t.Errorf("closed conversation: %v, want conversation-closed", err)
	}
}

// TestTrustedJournalUpdatesTheInputInPlace: a Trusted Commit returns the
// caller's own entries, each updated to the entry stored (what
// journal.CommitInput.Trusted allows); an untrusted Commit leaves the
// input as it was.
func TestTrustedJournalUpdatesTheInputInPlace(t *testing.T) {
	ctx := context.Background()
	s, tenant, conv := trustedRun(t)
	own := []bindings.JournalEntry{{Key: "own", Status: bindings.StepCompleted, Output: json.RawMessage(`{"a": 1}`)}}
	if _, _, _, err := commitOf(ctx, s, false, journal.CommitInput{TenantID: tenant, RunID: "r", Owner: "o", Entries: own}); err != nil {
		t.Fatal(err)
	}
	if own[0].Seq != 0 || string(own[0].Output) != `{"a": 1}` {
		t.Fatalf("an untrusted Commit changed its input: %+v", own[0])
	}
	in := []bindings.JournalEntry{{Key: "a", Status: bindings.StepCompleted, Output: json.RawMessage(`{"a": 1}`)}, {Key: "own", Status: bindings.StepCompleted, Output: json.RawMessage(`2`)}}
	got, appended, _, err := commitOf(ctx, s, true, journal.CommitInput{TenantID: tenant, RunID: "r", Owner: "o", Entries: in})
	if err != nil || &got[0] != &in[0] || in[0].Seq != 2 || string(in[0].Output) != `{"a":1}` || in[0].At.IsZero() || !appended[0] {
		t.Fatalf("trusted Commit = %+v %v, %v (input %+v)", got, appended, err, in)
	}
	if appended[1] || in[1].Seq != 1 || string(in[1].Output) != `{"a":1}` {
		t.Fatalf("the entry stored before: %+v, appended %v", in[1], appended[1])
	}
	steps := []bindings.JournalEntry{{Key: "b", Status: bindings.StepCompleted}, {Key: "msg", Status: bindings.StepCompleted}, {Key: "c", Status: bindings.StepStarted}}
	res, err := s.Commit(ctx, journal.CommitInput{TenantID: tenant, RunID: "r", Owner: "o", Entries: steps, Trusted: true,
		Message: &journal.Message{Index: 1, Message: bindings.AppendMessageInput{TenantID: tenant, ConversationID: conv.ID, ID: "m", Role: bindings.RoleUser, Content: "hi"}}})
	if err != nil || len(res.Entries) != 3 || &res.Entries[0] != &steps[0] || steps[0].Seq <= 2 || steps[1].Seq <= steps[0].Seq || steps[2].Seq <= steps[1].Seq {
		t.Fatalf("trusted Commit of a message step = %+v, %v (input %+v)", res, err, steps)
	}
	var step struct{ Seq int64 }
	if err := json.Unmarshal(steps[1].Output, &step); err != nil || step.Seq != res.Message.Seq || step.Seq == 0 {
		t.Fatalf("the message step's output %s, message seq %d", steps[1].Output, res.Message.Seq)
	}
}
