package memstore_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
)

// sharedReader is the trusted journal of s as a
// bindings.SharedJournalReader.
func sharedReader(t *testing.T, s *memstore.Store) bindings.SharedJournalReader {
	t.Helper()
	j, _, _ := journalOf(t, s)
	sr, ok := j.(bindings.SharedJournalReader)
	if !ok {
		t.Fatal("the trusted journal is not a SharedJournalReader")
	}
	return sr
}

// deepCopyEntries copies entries, outputs and errors included, so that
// what a shared read returned can be compared with what it returns later.
func deepCopyEntries(es []bindings.JournalEntry) []bindings.JournalEntry {
	out := make([]bindings.JournalEntry, len(es))
	for i, e := range es {
		if e.Output != nil {
			e.Output = append(json.RawMessage(nil), e.Output...)
		}
		if e.Error != nil {
			se := *e.Error
			e.Error = &se
		}
		e.Key, e.Node = strings.Clone(e.Key), strings.Clone(e.Node)
		out[i] = e
	}
	return out
}

// appendShared journals three entries in run r: outputs, one without,
// a node and an error, and a time that int64 nanoseconds do not give back.
func appendShared(t *testing.T, s *memstore.Store) {
	t.Helper()
	if _, _, err := s.AppendSteps(t.Context(), bindings.AppendStepsInput{TenantID: "t", RunID: "r", Owner: "o", Entries: []bindings.JournalEntry{
		{Key: "s/1", Node: "n", Status: bindings.StepCompleted, Output: json.RawMessage(`{"a":1}`)},
		{Key: "s/2", Status: bindings.StepStarted, At: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))},
		{Key: "s/3", Status: bindings.StepFailed, Output: json.RawMessage(`[2]`), Error: &bindings.StepError{Code: "c", Message: "m"}},
	}}); err != nil {
		t.Fatal(err)
	}
}

// TestReadJournalSharedIsReadJournal: a shared read gives ReadJournal's
// entries and errors, appended to dst (in its capacity), each output
// capped at its length.
func TestReadJournalSharedIsReadJournal(t *testing.T) {
	s, _ := openTrustedRun(t, nil)
	appendShared(t, s)
	sr := sharedReader(t, s)
	want, err := s.ReadJournal(t.Context(), "t", "r")
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]bindings.JournalEntry, 1, 8)
	dst[0].Key = "mine"
	got, err := sr.ReadJournalShared(t.Context(), "t", "r", dst)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0].Key != "mine" || &got[0] != &dst[0] {
		t.Fatalf("ReadJournalShared did not append to dst in place: %d entries, first %q", len(got), got[0].Key)
	}
	if !reflect.DeepEqual(got[1:], want) {
		t.Errorf("ReadJournalShared = %+v, want ReadJournal's %+v", got[1:], want)
	}
	for _, e := range got[1:] {
		if cap(e.Output) != len(e.Output) {
			t.Errorf("entry %s: output capacity %d, length %d", e.Key, cap(e.Output), len(e.Output))
		}
	}
	for _, c := range []struct{ tenant, run string }{{"t", "nope"}, {"other", "r"}, {"", "r"}, {"t", "a\x00b"}} {
		_, werr := s.ReadJournal(t.Context(), c.tenant, c.run)
		_, gerr := sr.ReadJournalShared(t.Context(), c.tenant, c.run, nil)
		if werr == nil || agents.CodeOf(gerr) != agents.CodeOf(werr) {
			t.Errorf("ReadJournalShared(%q, %q) = %v, ReadJournal gives %v", c.tenant, c.run, gerr, werr)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := sr.ReadJournalShared(ctx, "t", "r", nil); err == nil {
		t.Error("ReadJournalShared with a cancelled context succeeded")
	}
}

// TestReadJournalSharedAfterWrites: what a shared read returned does not
// change when the run is written after it — entries appended into the same
// text chunk and into new ones, by every writer, a status and a lease —
// and appending to a returned output copies it instead of writing over
// the stored bytes after it.
func TestReadJournalSharedAfterWrites(t *testing.T) {
	for _, check := range []bool{false, true} {
		s, conv := openTrustedRun(t, &memstore.Options{CheckTrusted: check})
		appendShared(t, s)
		sr := sharedReader(t, s)
		read, err := sr.ReadJournalShared(t.Context(), "t", "r", nil)
		if err != nil {
			t.Fatal(err)
		}
		was := deepCopyEntries(read)

		grown := append(read[0].Output, `xxxxxxxx`...)
		read[2].Output = append(read[2].Output, ' ')
		read[1].Key = "changed" // the caller's own values
		big := json.RawMessage(`"` + strings.Repeat("b", 70000) + `"`)
		j, f, m := journalOf(t, s)
		if _, _, err := j.AppendSteps(t.Context(), bindings.AppendStepsInput{TenantID: "t", RunID: "r", Owner: "o", Entries: []bindings.JournalEntry{
			{Key: "s/4", Status: bindings.StepCompleted, Output: json.RawMessage(`{"d":4}`)},
			{Key: "s/5", Status: bindings.StepCompleted, Output: big},
		}}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.AppendStep(t.Context(), bindings.AppendStepInput{TenantID: "t", RunID: "r", Owner: "o", Entry: bindings.JournalEntry{Key: "s/6", Status: bindings.StepCompleted, Output: json.RawMessage(`6`)}}); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := m.AppendStepsAndMessage(t.Context(), bindings.AppendStepsInput{TenantID: "t", RunID: "r", Owner: "o", Entries: []bindings.JournalEntry{
			{Key: "s/7", Status: bindings.StepCompleted, Output: json.RawMessage(`[7]`)},
		}}, bindings.AppendMessageInput{TenantID: "t", ConversationID: conv, Role: bindings.RoleUser, Content: "hi"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AcquireLease(t.Context(), bindings.LeaseInput{TenantID: "t", RunID: "r", Owner: "o", TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.FinishRun(t.Context(), bindings.FinishRunInput{TenantID: "t", RunID: "r", Owner: "o", Status: bindings.RunCompleted, Entries: []bindings.JournalEntry{
			{Key: "s/8", Status: bindings.StepCompleted, Output: json.RawMessage(`{"e":8}`)},
		}}); err != nil {
			t.Fatal(err)
		}
		read[1].Key = was[1].Key
		read[2].Output = read[2].Output[:len(was[2].Output)]
		if !reflect.DeepEqual(read, was) {
			t.Errorf("check %v: the writes after a shared read changed it: %+v, was %+v", check, read, was)
		}
		if string(grown) != `{"a":1}xxxxxxxx` {
			t.Errorf("an append to a read output gave %q", grown)
		}
		now, err := s.ReadJournal(t.Context(), "t", "r")
		if err != nil || len(now) != 8 {
			t.Fatalf("check %v: ReadJournal = %d entries, %v", check, len(now), err)
		}
		if !reflect.DeepEqual(now[:3], was) {
			t.Errorf("check %v: appending to read outputs changed the store: %+v", check, now[:3])
		}
		if string(now[3].Output) != `{"d":4}` || string(now[4].Output) != string(big) || string(now[7].Output) != `{"e":8}` {
			t.Errorf("check %v: later entries read %q, %d bytes, %q", check, now[3].Output, len(now[4].Output), now[7].Output)
		}
	}
}

// TestReadJournalSharedAfterPrune: a run deleted by retention after a
// shared read leaves what the read returned as it was.
func TestReadJournalSharedAfterPrune(t *testing.T) {
	for _, check := range []bool{false, true} {
		s, _ := openTrustedRun(t, &memstore.Options{CheckTrusted: check})
		appendShared(t, s)
		if _, _, err := s.FinishRun(t.Context(), bindings.FinishRunInput{TenantID: "t", RunID: "r", Owner: "o", Status: bindings.RunCompleted}); err != nil {
			t.Fatal(err)
		}
		read, err := sharedReader(t, s).ReadJournalShared(t.Context(), "t", "r", nil)
		if err != nil {
			t.Fatal(err)
		}
		was := deepCopyEntries(read)
		st, err := s.Prune(t.Context(), "t", time.Now().Add(time.Hour))
		if err != nil || st.Runs != 1 {
			t.Fatalf("Prune = %+v, %v", st, err)
		}
		if _, err := s.ReadJournal(t.Context(), "t", "r"); agents.CodeOf(err) != agents.CodeRunJournalUnavailable {
			t.Fatalf("the pruned run's journal reads %v", err)
		}
		// A run of the same id, journaled anew, writes its own bytes.
		if _, err := s.StartRun(t.Context(), bindings.StartRunInput{TenantID: "t", RunID: "r", Owner: "o", LeaseTTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.AppendSteps(t.Context(), bindings.AppendStepsInput{TenantID: "t", RunID: "r", Owner: "o", Entries: []bindings.JournalEntry{
			{Key: "x/1", Status: bindings.StepCompleted, Output: json.RawMessage(`{"zzzzzz":0}`)},
		}}); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(read, was) {
			t.Errorf("check %v: retention after a shared read changed it: %+v, was %+v", check, read, was)
		}
	}
}

// TestReadJournalSharedCheckTrusted: with Options.CheckTrusted the store
// holds a shared reader to its vouch — a write to the bytes it handed
// out makes the run's next journal call fail, whichever it is — and a
// reader that keeps it (changing only the values it owns) is never
// refused.
func TestReadJournalSharedCheckTrusted(t *testing.T) {
	calls := map[string]func(*memstore.Store) error{
		"ReadJournal": func(s *memstore.Store) error {
			_, err := s.ReadJournal(t.Context(), "t", "r")
			return err
		},
		"ReadJournalShared": func(s *memstore.Store) error {
			_, err := sharedReader(t, s).ReadJournalShared(t.Context(), "t", "r", nil)
			return err
		},
		"AppendStep": func(s *memstore.Store) error {
			_, _, err := s.AppendStep(t.Context(), bindings.AppendStepInput{TenantID: "t", RunID: "r", Owner: "o", Entry: bindings.JournalEntry{Key: "n/1", Status: bindings.StepStarted}})
			return err
		},
		"AppendSteps (trusted)": func(s *memstore.Store) error {
			j, _, _ := journalOf(t, s)
			_, _, err := j.AppendSteps(t.Context(), bindings.AppendStepsInput{TenantID: "t", RunID: "r", Owner: "o", Entries: []bindings.JournalEntry{{Key: "n/1", Status: bindings.StepStarted}}})
			return err
		},
		"FinishRun": func(s *memstore.Store) error {
			_, _, err := s.FinishRun(t.Context(), bindings.FinishRunInput{TenantID: "t", RunID: "r", Owner: "o", Status: bindings.RunCompleted})
			return err
		},
	}
	for name, call := range calls {
		s, _ := openTrustedRun(t, &memstore.Options{CheckTrusted: true})
		appendShared(t, s)
		read, err := sharedReader(t, s).ReadJournalShared(t.Context(), "t", "r", nil)
		if err != nil {
			t.Fatal(err)
		}
		read[0].Key, read[2].Output = "mine", json.RawMessage(`{}`)
		if err := call(s); err != nil {
			t.Errorf("%s after a shared read whose reader kept its vouch: %v", name, err)
		}
		s, _ = openTrustedRun(t, &memstore.Options{CheckTrusted: true})
		appendShared(t, s)
		if read, err = sharedReader(t, s).ReadJournalShared(t.Context(), "t", "r", nil); err != nil {
			t.Fatal(err)
		}
		read[0].Output[1] = 'Z' // breaks the vouch
		if err := call(s); agents.CodeOf(err) != agents.CodeInvalidMessage {
			t.Errorf("%s after a write to shared bytes = %v, want invalid-message", name, err)
		}
	}
}
