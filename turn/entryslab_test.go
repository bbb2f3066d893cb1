package turn_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// copyingStore is memstore without its trusted journal: a wrapper that
// embeds the store writes through the store's own methods, which return
// copies of the entries they are given (the path of a store such as
// pgstore), instead of the entries themselves updated in place.
type copyingStore struct{ *memstore.Store }

// TestJournalThroughTheEntrySlab holds that the drive's journal
// bookkeeping — the buffer and the entries written with it built in the
// pooled entry slab, taken there as the trusted store updated them — stores
// and returns the same as through a store that returns copies, also when a
// turn's journal outgrows the pooled slab (five tool calls in a drive, so a
// buffer is open when the slab fills), and that a later turn on the same
// pooled run changes neither the earlier Result nor its journal.
func TestJournalThroughTheEntrySlab(t *testing.T) {
	script := func() []scripted.Response {
		var rs []scripted.Response
		for i := range 5 {
			rs = append(rs, scripted.Call(fmt.Sprintf("call_%d", i+1), "acme.clause-search", map[string]any{"query": fmt.Sprintf("clause %d", i)}).WithUsage(100, 10, 0.001))
		}
		return append(rs, scripted.Say("Clause C-7 fits.").WithUsage(200, 20, 0.002))
	}
	type outcome struct {
		res             turn.Result
		result, journal string
	}
	run := func(copying bool) []outcome {
		f := newFixture(t, script(), func(s *agent.Spec) {
			steps := 12
			s.Budget.MaxSteps = &steps
		})
		b := f.bindings()
		if copying {
			c := copyingStore{f.store}
			b.Runs, b.Conversations, b.Journal = c, c, nil
		}
		var outs []outcome
		for i := range 2 {
			if i > 0 {
				f.provider.Append(script()...)
			}
			in := f.input("Find the clauses.")
			in.RunID = fmt.Sprintf("run-%d", i)
			res, err := turn.Invoke(t.Context(), in, b)
			if err != nil {
				t.Fatalf("Invoke %d: %v", i, err)
			}
			js, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			j := f.journal(res.RunID)
			if len(j) <= 20 {
				t.Fatalf("the journal has %d entries, want more than the pooled slab's 20", len(j))
			}
			jj, err := json.Marshal(j)
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, outcome{res, string(js), string(jj)})
		}
		// The first turn, read again after the second reused its run.
		first := outs[0]
		if js, err := json.Marshal(first.res); err != nil || string(js) != first.result {
			t.Errorf("copying=%v: the first turn's Result changed after the second:\n%s\nwant\n%s", copying, js, first.result)
		}
		if jj, err := json.Marshal(f.journal("run-0")); err != nil || string(jj) != first.journal {
			t.Errorf("copying=%v: the first turn's journal changed after the second:\n%s\nwant\n%s", copying, jj, first.journal)
		}
		return outs
	}
	trusted, copying := run(false), run(true)
	for i := range trusted {
		if trusted[i].result != copying[i].result {
			t.Errorf("turn %d: Result through the trusted journal\n%s\nthrough copies\n%s", i, trusted[i].result, copying[i].result)
		}
		if trusted[i].journal != copying[i].journal {
			t.Errorf("turn %d: journal through the trusted journal\n%s\nthrough copies\n%s", i, trusted[i].journal, copying[i].journal)
		}
	}
}
