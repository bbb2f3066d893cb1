package memstore_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/memstore"
)

// brokenEntries are entries each of which breaks one of the checks a
// journal.CommitInput.Trusted caller vouches for.
var brokenEntries = map[string]bindings.JournalEntry{
	"output not JSON":     {Key: "k", Status: bindings.StepCompleted, Output: json.RawMessage(`{"a":`)},
	"output not UTF-8":    {Key: "k", Status: bindings.StepCompleted, Output: json.RawMessage("\"\xff\"")},
	"key with a control":  {Key: "k\x00", Status: bindings.StepCompleted},
	"empty key":           {Status: bindings.StepCompleted},
	"node with a control": {Key: "k", Node: "n\n", Status: bindings.StepCompleted},
	"unknown status":      {Key: "k", Status: "done"},
}

// commit is one Commit of entries by owner "o" to run r of tenant t,
// trusted (journal.CommitInput.Trusted) or not, with msg (nil: none)
// appended after the entries and finish as the run's new status.
func commit(ctx context.Context, s *memstore.Store, trusted bool, owner, run string, entries []bindings.JournalEntry, msg *bindings.AppendMessageInput, finish bindings.RunStatus) (journal.Committed, error) {
	in := journal.CommitInput{TenantID: "t", RunID: run, Owner: owner, Entries: entries, Finish: finish, Trusted: trusted}
	if msg != nil {
		in.Message = &journal.Message{Index: len(entries), Message: *msg}
	}
	return s.Commit(ctx, in)
}

// openTrustedRun starts run r in a conversation of tenant t on a fresh
// store.
func openTrustedRun(t *testing.T, opts *memstore.Options) (*memstore.Store, string) {
	t.Helper()
	s := memstore.New(opts)
	if _, err := s.StartRun(t.Context(), bindings.StartRunInput{TenantID: "t", RunID: "r", Owner: "o", LeaseTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	c, err := s.OpenConversation(t.Context(), bindings.OpenConversationInput{TenantID: "t", AgentID: "a", AgentVersion: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	return s, c.ID
}

// writes are the three ways to write an entry (entries, with a finish,
// with a message), trusted or not.
func writes(s *memstore.Store, conv string, trusted bool) map[string]func(context.Context, bindings.JournalEntry) error {
	return map[string]func(context.Context, bindings.JournalEntry) error{
		"Commit": func(ctx context.Context, e bindings.JournalEntry) error {
			_, err := commit(ctx, s, trusted, "o", "r", []bindings.JournalEntry{e}, nil, "")
			return err
		},
		"Commit with Finish": func(ctx context.Context, e bindings.JournalEntry) error {
			_, err := commit(ctx, s, trusted, "o", "r", []bindings.JournalEntry{e}, nil, bindings.RunCompleted)
			return err
		},
		"Commit with a Message": func(ctx context.Context, e bindings.JournalEntry) error {
			_, err := commit(ctx, s, trusted, "o", "r", []bindings.JournalEntry{e}, &bindings.AppendMessageInput{TenantID: "t", ConversationID: conv, ID: "m1", Role: bindings.RoleUser, Content: "hi"}, "")
			return err
		},
	}
}

// TestUntrustedEntriesAreRefused: Commit — with entries, a finish or a
// message — refuses an entry that breaks a check, and stores nothing; so
// does a Trusted Commit to a store with Options.CheckTrusted (a vouching
// caller's tests).
func TestUntrustedEntriesAreRefused(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		for name, e := range brokenEntries {
			s, conv := openTrustedRun(t, &memstore.Options{CheckTrusted: true})
			for how, write := range writes(s, conv, trusted) {
				if err := write(t.Context(), e); agents.CodeOf(err) != agents.CodeInvalidMessage {
					t.Errorf("trusted=%v, %s via %s: %v, want invalid-message", trusted, name, how, err)
				}
			}
			j, err := s.ReadJournal(t.Context(), "t", "r")
			if err != nil || len(j) != 0 {
				t.Errorf("trusted=%v, %s: journal %v, %v; want it empty", trusted, name, j, err)
			}
			if run, _ := s.GetRun(t.Context(), "t", "r"); run.Status != bindings.RunRunning {
				t.Errorf("trusted=%v, %s: run status %s after a refused FinishRun", trusted, name, run.Status)
			}
		}
	}
}

// TestUntrustedMessageIsRefused: a message whose metadata or tool call
// arguments are not JSON, or whose ids break the id rules, is refused with
// no entry stored — by Commit, and by a Trusted Commit with
// Options.CheckTrusted.
func TestUntrustedMessageIsRefused(t *testing.T) {
	msgs := map[string]func(*bindings.AppendMessageInput){
		"metadata not JSON": func(m *bindings.AppendMessageInput) { m.Metadata = json.RawMessage(`nope`) },
		"arguments not JSON": func(m *bindings.AppendMessageInput) {
			m.ToolCalls = []bindings.ToolCall{{ID: "c", Name: "x", Arguments: json.RawMessage(`{`)}}
		},
		"message id":     func(m *bindings.AppendMessageInput) { m.ID = "m\x01" },
		"participant id": func(m *bindings.AppendMessageInput) { m.ParticipantID = "p\n" },
	}
	for _, trusted := range []bool{false, true} {
		for name, edit := range msgs {
			s, conv := openTrustedRun(t, &memstore.Options{CheckTrusted: true})
			m := bindings.AppendMessageInput{TenantID: "t", ConversationID: conv, ID: "m1", Role: bindings.RoleUser, Content: "hi"}
			edit(&m)
			_, err := commit(t.Context(), s, trusted, "o", "r", []bindings.JournalEntry{{Key: "k", Status: bindings.StepCompleted}}, &m, "")
			if agents.CodeOf(err) != agents.CodeInvalidMessage {
				t.Errorf("trusted=%v, %s: %v, want invalid-message", trusted, name, err)
			}
			if j, _ := s.ReadJournal(t.Context(), "t", "r"); len(j) != 0 {
				t.Errorf("trusted=%v, %s: %d entries stored", trusted, name, len(j))
			}
		}
	}
}

// TestTrustedJournalChecksWhatIsNotVouched: a Trusted Commit (checks
// skipped) still refuses what depends on the store's state or is not
// vouched for — another owner's lease, a missing run, a closed
// conversation, an unknown role or run status — and otherwise stores what
// the store's own methods store.
func TestTrustedJournalChecksWhatIsNotVouched(t *testing.T) {
	ctx := t.Context()
	s, conv := openTrustedRun(t, nil)
	e := []bindings.JournalEntry{{Key: "k", Node: "n", Status: bindings.StepCompleted, Output: json.RawMessage(`{"a":1}`)}}
	if _, err := commit(ctx, s, true, "other", "r", e, nil, ""); agents.CodeOf(err) != agents.CodeRunBusy {
		t.Errorf("another owner: %v, want run-busy", err)
	}
	if _, err := commit(ctx, s, true, "", "nope", e, nil, ""); agents.CodeOf(err) != agents.CodeRunJournalUnavailable {
		t.Errorf("missing run: %v, want run-journal-unavailable", err)
	}
	if _, err := commit(ctx, s, true, "o", "r", e, nil, "done"); agents.CodeOf(err) != agents.CodeInvalidMessage {
		t.Errorf("unknown run status: %v, want invalid-message", err)
	}
	m := bindings.AppendMessageInput{TenantID: "t", ConversationID: conv, ID: "m1", Role: "robot", Content: "hi"}
	if _, err := commit(ctx, s, true, "o", "r", e, &m, ""); agents.CodeOf(err) != agents.CodeInvalidMessage {
		t.Errorf("unknown role: %v, want invalid-message", err)
	}
	if j, _ := s.ReadJournal(ctx, "t", "r"); len(j) != 0 {
		t.Fatalf("%d entries stored by refused calls", len(j))
	}
	m.Role = bindings.RoleUser
	res, err := commit(ctx, s, true, "o", "r", e, &m, "")
	if err != nil || len(res.Entries) != 1 || !res.Appended[0] || res.Entries[0].Seq != 1 || res.Message.Seq != 1 {
		t.Fatalf("Commit with a message = %+v, %v", res, err)
	}
	if err := s.CloseConversation(ctx, "t", conv); err != nil {
		t.Fatal(err)
	}
	e2 := []bindings.JournalEntry{{Key: "k2", Status: bindings.StepCompleted}}
	m.ID = "m2"
	if _, err := commit(ctx, s, true, "o", "r", e2, &m, ""); agents.CodeOf(err) != agents.CodeConversationClosed {
		t.Errorf("closed conversation: %v, want conversation-closed", err)
	}
	j, err := s.ReadJournal(ctx, "t", "r")
	if err != nil || len(j) != 2 || string(j[0].Output) != `{"a":1}` {
		t.Fatalf("journal %v, %v", j, err)
	}
}

// TestTrustedAppendsShareOnlyWithTheInput: a Trusted Commit returns
// the caller's entries updated in place (with their Seq and At), the
// stored entry (a copy) for a key and phase stored already, and flags
// that a duplicate does not turn false for later calls.
func TestTrustedAppendsShareOnlyWithTheInput(t *testing.T) {
	ctx := t.Context()
	s, _ := openTrustedRun(t, nil)
	in := []bindings.JournalEntry{{Key: "a", Status: bindings.StepCompleted, Output: json.RawMessage(`{"a":1}`)}}
	res, err := commit(ctx, s, true, "o", "r", in, nil, "")
	got, appended := res.Entries, res.Appended
	if err != nil || !appended[0] || got[0].Seq != 1 || in[0].Seq != 1 || in[0].At.IsZero() {
		t.Fatalf("first append = %v %v, %v (input %v)", got, appended, err, in)
	}
	again := []bindings.JournalEntry{{Key: "b", Status: bindings.StepCompleted}, {Key: "a", Status: bindings.StepFailed, Output: json.RawMessage(`2`)}}
	res, err = commit(ctx, s, true, "o", "r", again, nil, "")
	got, appended = res.Entries, res.Appended
	if err != nil || !appended[0] || appended[1] || got[1].Seq != 1 || string(got[1].Output) != `{"a":1}` || got[1].Status != bindings.StepCompleted {
		t.Fatalf("append with a duplicate = %v %v, %v", got, appended, err)
	}
	res, err = commit(ctx, s, true, "o", "r", []bindings.JournalEntry{{Key: "c", Status: bindings.StepCompleted}, {Key: "d", Status: bindings.StepCompleted}}, nil, "")
	appended = res.Appended
	if err != nil || !appended[0] || !appended[1] {
		t.Fatalf("later append = %v, %v", appended, err)
	}
	j, _ := s.ReadJournal(ctx, "t", "r")
	if len(j) != 4 || string(j[0].Output) != `{"a":1}` {
		t.Fatalf("journal %v", j)
	}
}
