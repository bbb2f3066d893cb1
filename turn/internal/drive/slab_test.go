package drive

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/memstore"
)

// TestIndexFollowsTheStore holds that the journal index of a pooled drive
// points at entries equal to what the store keeps — Seq, At and outputs —
// after buffered results and entries written at once have gone through
// the entry slab (see bufTail, recordAt): with a store that updates the
// entries in place (memstore's Driver, trusted) and with one that returns
// copies (journal.Adapt), over more entries than the pooled slab holds, so that a buffer
// is open when the slab fills. A buffer written over entries the index
// still points to would show here.
func TestIndexFollowsTheStore(t *testing.T) {
	for _, trusted := range []bool{true, false} {
		t.Run(fmt.Sprintf("trusted=%v", trusted), func(t *testing.T) {
			ctx := context.Background()
			store := memstore.New(nil)
			if _, err := store.StartRun(ctx, bindings.StartRunInput{TenantID: "t1", RunID: "run-1", FlowID: "agent.turn", FlowVersion: "1", Owner: "o1", LeaseTTL: time.Minute}); err != nil {
				t.Fatal(err)
			}
			var jd journal.Driver = store
			if !trusted {
				jd = journal.Adapt(journal.Bindings{Runs: store, Snapshots: store, Conversations: store})
			}
			r := &Journal{}
			r.Init(&Config{TenantID: "t1", RunID: "run-1", Owner: "o1", Runs: store, Driver: jd, Native: trusted}, &Mem{}, nil)
			n := 3 * entrySlabLen
			for i := range n {
				key, out := fmt.Sprintf("step/%d", i), []byte(fmt.Sprintf(`{"i":%d}`, i))
				var err error
				switch i % 5 {
				case 2:
					_, _, err = r.AppendEntry(ctx, key, "node", bindings.StepStarted, nil, nil)
				case 4:
					_, _, err = r.AppendEntry(ctx, key, "node", bindings.StepCompleted, out, nil)
				default:
					_, _, err = r.BufferEntry(ctx, key, "node", out)
				}
				if err != nil {
					t.Fatalf("entry %d: %v", i, err)
				}
				if i%7 == 6 {
					if err := r.Flush(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := r.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			stored, err := store.ReadJournal(ctx, "t1", "run-1")
			if err != nil {
				t.Fatal(err)
			}
			if len(stored) != n {
				t.Fatalf("%d entries stored, want %d", len(stored), n)
			}
			for _, e := range stored {
				st := r.entries.get(e.Key)
				if st == nil {
					t.Fatalf("the index has no key %s", e.Key)
				}
				got := r.At(st.Result)
				if e.Status == bindings.StepStarted {
					got = r.At(st.Started)
				}
				if got == nil || !reflect.DeepEqual(*got, e) {
					t.Errorf("the index holds %+v for %s, the store %+v", got, e.Key, e)
				}
			}
		})
	}
}
