package memstore_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/kindgi/agents/bindings"
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
				es, ap, err := s.AppendSteps(ctx, bindings.AppendStepsInput{TenantID: "t", RunID: "r", Entries: []bindings.JournalEntry{{Key: k, Status: st, Output: out}}})
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
			es, ap, err := s.AppendSteps(ctx, bindings.AppendStepsInput{TenantID: "t", RunID: "r", Entries: []bindings.JournalEntry{{Key: k, Status: st}}})
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
