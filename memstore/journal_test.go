package memstore_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/memstore"
)

// TestJournalIdempotentPastIndexThreshold: a journal of 200 entries (far
// past the length where memstore stops scanning and indexes key and phase)
// still keeps the first entry of each key and phase, with AppendStep and
// AppendSteps alike, and a returned or stored output shares no bytes with
// the caller's.
func TestJournalIdempotentPastIndexThreshold(t *testing.T) {
	ctx := t.Context()
	s := memstore.New(nil)
	if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: "t", RunID: "r"}); err != nil {
		t.Fatal(err)
	}
	const n = 100
	seqs := map[string]int64{}
	for i := range n {
		k := fmt.Sprintf("step-%d", i)
		for _, st := range []bindings.StepStatus{bindings.StepStarted, bindings.StepCompleted} {
			out := json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))
			var e bindings.JournalEntry
			var appended bool
			if i%2 == 0 {
				var err error
				if e, appended, err = s.AppendStep(ctx, bindings.AppendStepInput{TenantID: "t", RunID: "r", Entry: bindings.JournalEntry{Key: k, Status: st, Output: out}}); err != nil {
					t.Fatal(err)
				}
			} else {
				es, ap, err := appendSteps(ctx, s, journal.CommitInput{TenantID: "t", RunID: "r", Entries: []bindings.JournalEntry{{Key: k, Status: st, Output: out}}})
				if err != nil {
					t.Fatal(err)
				}
				e, appended = es[0], ap[0]
			}
			if !appended {
				t.Fatalf("%s %s: not appended", k, st)
			}
			out[1] = 'X' // the caller reuses its buffer: the store keeps its own copy
			seqs[k+"/"+st.Phase()] = e.Seq
		}
	}
	// Every key and phase again, in both ways and with another outcome: the
	// first entry is returned and nothing is appended.
	for i := range n {
		k := fmt.Sprintf("step-%d", i)
		for _, st := range []bindings.StepStatus{bindings.StepStarted, bindings.StepFailed} {
			e1, ap1, err := s.AppendStep(ctx, bindings.AppendStepInput{TenantID: "t", RunID: "r", Entry: bindings.JournalEntry{Key: k, Status: st, Output: json.RawMessage(`1`)}})
			if err != nil {
				t.Fatal(err)
			}
			es, ap, err := appendSteps(ctx, s, journal.CommitInput{TenantID: "t", RunID: "r", Entries: []bindings.JournalEntry{{Key: k, Status: st}}})
			if err != nil {
				t.Fatal(err)
			}
			want := seqs[k+"/"+st.Phase()]
			for _, got := range []struct {
				e  bindings.JournalEntry
				ap bool
			}{{e1, ap1}, {es[0], ap[0]}} {
				if got.ap || got.e.Seq != want || string(got.e.Output) != fmt.Sprintf(`{"i":%d}`, i) {
					t.Fatalf("%s %s again: appended=%v seq=%d output=%s, want the first (seq %d)", k, st, got.ap, got.e.Seq, got.e.Output, want)
				}
			}
		}
	}
	j, err := s.ReadJournal(ctx, "t", "r")
	if err != nil {
		t.Fatal(err)
	}
	if len(j) != 2*n {
		t.Fatalf("journal has %d entries, want %d", len(j), 2*n)
	}
	for i, e := range j {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d", i, e.Seq)
		}
	}
}

// TestCompactFormsReadBackAsWritten: the compact records memstore keeps
// entries and messages in give back exactly what was stored — every
// field, a UTC time, a time with a location and a monotonic reading
// (kept aside), an error, no node — with either append and from every
// read.
func TestCompactFormsReadBackAsWritten(t *testing.T) {
	ctx := t.Context()
	s := memstore.New(nil)
	if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: "t", RunID: "r"}); err != nil {
		t.Fatal(err)
	}
	utc := time.Date(2026, 3, 4, 5, 6, 7, 891, time.UTC)
	local := time.Now() // a location and a monotonic reading
	zone := time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("X", 3600))
	in := []bindings.JournalEntry{
		{Key: "setup", Node: "setup", Status: bindings.StepCompleted, Output: json.RawMessage(`{"a":1}`), At: utc},
		{Key: "agent-loop/1/model-call", Status: bindings.StepStarted, At: local},
		{Key: "agent-loop/1/model-call", Node: "model-call", Status: bindings.StepFailed, Error: &bindings.StepError{Code: "c", Message: "m"}, At: zone},
		{Key: "agent-loop/1/tool", Node: "dispatch-tools", Status: bindings.StepParked, Output: json.RawMessage(`[]`), At: utc},
	}
	var want []bindings.JournalEntry
	for i, e := range in {
		var got bindings.JournalEntry
		if i%2 == 0 {
			got, _, _ = s.AppendStep(ctx, bindings.AppendStepInput{TenantID: "t", RunID: "r", Entry: e})
		} else {
			es, _, err := appendSteps(ctx, s, journal.CommitInput{TenantID: "t", RunID: "r", Entries: []bindings.JournalEntry{e}})
			if err != nil {
				t.Fatal(err)
			}
			got = es[0]
		}
		e.Seq = int64(i + 1)
		if !reflect.DeepEqual(got, e) {
			t.Fatalf("append %d returned %+v, want %+v", i, got, e)
		}
		want = append(want, e)
	}
	j, err := s.ReadJournal(ctx, "t", "r")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(j, want) {
		t.Fatalf("journal = %+v, want %+v", j, want)
	}
	for i, e := range in {
		again, appended, err := s.AppendStep(ctx, bindings.AppendStepInput{TenantID: "t", RunID: "r", Entry: e})
		if err != nil || appended || !reflect.DeepEqual(again, want[i]) {
			t.Fatalf("append %d again = %+v, %v, %v; want the stored %+v", i, again, appended, err, want[i])
		}
	}

	conv, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "t", AgentID: "a", AgentVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []bindings.AppendMessageInput{
		{TenantID: "t", ConversationID: conv.ID, ID: "m1", Role: bindings.RoleUser, Content: "hello", TurnNumber: 1, RunID: "r", ParticipantID: "p", CreatedAt: utc},
		{TenantID: "t", ConversationID: conv.ID, ID: "m2", Role: bindings.RoleAgent, ToolCalls: []bindings.ToolCall{{ID: "c1", Name: "n", Arguments: json.RawMessage(`{}`)}}, TurnNumber: 1, RunID: "r", CreatedAt: local},
		{TenantID: "t", ConversationID: conv.ID, Role: bindings.RoleTool, Content: "out", ToolCallID: "c1", TurnNumber: 1, Metadata: json.RawMessage(`{"k":"v"}`)},
	}
	var stored []bindings.ConversationMessage
	for _, m := range msgs {
		got, err := s.AppendMessage(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, got)
	}
	read, err := s.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: "t", ConversationID: conv.ID, Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(read, stored) {
		t.Fatalf("messages read = %+v, want %+v", read, stored)
	}
	if read[0].Content != "hello" || read[0].ParticipantID != "p" || read[1].CreatedAt != local || read[2].ToolCallID != "c1" || string(read[2].Metadata) != `{"k":"v"}` {
		t.Fatalf("messages read = %+v", read)
	}
	again, err := s.AppendMessage(ctx, msgs[0])
	if err != nil || !reflect.DeepEqual(again, stored[0]) {
		t.Fatalf("append again = %+v, %v; want %+v", again, err, stored[0])
	}
}
