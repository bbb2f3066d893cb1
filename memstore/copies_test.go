package memstore_test

import (
	"encoding/json"
	"testing"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
)

// TestTrustedCommitKeepsCopies: once a Trusted Commit has returned, the
// caller may write over the outputs it passed (entries, a message's
// metadata and the message step's encoded output) and what the store reads
// back does not change.
func TestTrustedCommitKeepsCopies(t *testing.T) {
	s, conv := openTrustedRun(t, nil)
	arena := []byte(`{"a":1}{"b":2}{"c":3}`)
	if _, err := commit(t.Context(), s, true, "o", "r", []bindings.JournalEntry{
		{Key: "s/1", Status: bindings.StepCompleted, Output: arena[0:7:7]},
		{Key: "s/2", Status: bindings.StepCompleted, Output: arena[7:14:14]},
	}, nil, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := commit(t.Context(), s, true, "o", "r", []bindings.JournalEntry{
		{Key: "s/3", Status: bindings.StepCompleted, Output: arena[14:21:21]},
	}, &bindings.AppendMessageInput{TenantID: "t", ConversationID: conv, ID: "m1", Role: bindings.RoleUser, Content: "hi", Metadata: arena[0:7:7]}, ""); err != nil {
		t.Fatal(err)
	}
	stepOut := []byte(`{"m":1}`)
	if _, err := s.Commit(t.Context(), journal.CommitInput{
		TenantID: "t", RunID: "r", Owner: "o", Trusted: true,
		Entries: []bindings.JournalEntry{{Key: "s/4", Status: bindings.StepCompleted}},
		Message: &journal.Message{Index: 0, Message: bindings.AppendMessageInput{TenantID: "t", ConversationID: conv, ID: "m2", Role: bindings.RoleAgent, Content: "ok"},
			Encode: func(bindings.ConversationMessage) ([]byte, error) { return stepOut, nil }},
	}); err != nil {
		t.Fatal(err)
	}
	for i := range arena {
		arena[i] = 'x'
	}
	for i := range stepOut {
		stepOut[i] = 'x'
	}
	got, err := s.ReadJournal(t.Context(), "t", "r")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"a":1}`, `{"b":2}`, `{"c":3}`, `{"m":1}`}
	if len(got) != len(want) {
		t.Fatalf("journal has %d entries, want %d", len(got), len(want))
	}
	for i, e := range got {
		if string(e.Output) != want[i] {
			t.Errorf("entry %s output = %s, want %s", e.Key, e.Output, want[i])
		}
	}
	msgs, err := s.ReadMessages(t.Context(), bindings.ReadMessagesInput{TenantID: "t", ConversationID: conv, Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) == 0 || !json.Valid(msgs[0].Metadata) || string(msgs[0].Metadata) != `{"a":1}` {
		t.Errorf("message metadata = %s, want {\"a\":1}", msgs[0].Metadata)
	}
}

// TestReadJournalOutputsAreIndependentCopies holds that the outputs
// ReadJournal returns, which share one buffer per read, are the caller's
// own: appending to one does not write over the next, writing into one
// changes neither the store nor a later read, and an entry without an
// output reads as nil.
func TestReadJournalOutputsAreIndependentCopies(t *testing.T) {
	s, _ := openTrustedRun(t, nil)
	if _, _, err := appendSteps(t.Context(), s, journal.CommitInput{TenantID: "t", RunID: "r", Owner: "o", Entries: []bindings.JournalEntry{
		{Key: "s/1", Status: bindings.StepCompleted, Output: json.RawMessage(`{"a":1}`)},
		{Key: "s/2", Status: bindings.StepStarted},
		{Key: "s/3", Status: bindings.StepCompleted, Output: json.RawMessage(`[2]`)},
	}}); err != nil {
		t.Fatal(err)
	}
	es, err := s.ReadJournal(t.Context(), "t", "r")
	if err != nil || len(es) != 3 {
		t.Fatalf("ReadJournal = %v, %v", es, err)
	}
	if es[1].Output != nil {
		t.Errorf("an entry without an output reads as %q, want nil", es[1].Output)
	}
	_ = append(es[0].Output, `xxxx`...)
	if string(es[2].Output) != `[2]` {
		t.Errorf("appending to the first output wrote over the third: %q", es[2].Output)
	}
	es[0].Output[2] = 'Z'
	again, err := s.ReadJournal(t.Context(), "t", "r")
	if err != nil {
		t.Fatal(err)
	}
	if string(again[0].Output) != `{"a":1}` || string(again[2].Output) != `[2]` {
		t.Errorf("a caller's write changed the store: %q, %q", again[0].Output, again[2].Output)
	}
}
