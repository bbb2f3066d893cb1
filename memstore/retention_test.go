package memstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/bindingstest"
	"github.com/kindgi/agents/memstore"
)

// seedFinished stores n completed runs of tenant with entries journal
// entries, a snapshot and an approval each, as of the store's clock.
func seedFinished(tb testing.TB, s *memstore.Store, tenant string, n, entries int) {
	tb.Helper()
	ctx := context.Background()
	for i := range n {
		run := fmt.Sprintf("r%d", i)
		if err := s.Write(ctx, bindings.RunSnapshotWriteInput{TenantID: tenant, RunID: run}); err != nil {
			tb.Fatal(err)
		}
		if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: run, Owner: "w", LeaseTTL: time.Minute}); err != nil {
			tb.Fatal(err)
		}
		for k := range entries {
			if _, _, err := s.AppendStep(ctx, bindings.AppendStepInput{TenantID: tenant, RunID: run, Entry: bindings.JournalEntry{Key: fmt.Sprintf("k%d", k), Status: bindings.StepCompleted}}); err != nil {
				tb.Fatal(err)
			}
		}
		if _, err := s.RequestApproval(ctx, bindings.ApprovalRequest{TenantID: tenant, ID: run + "/a", RunID: run}); err != nil {
			tb.Fatal(err)
		}
		if err := s.SetRunStatus(ctx, tenant, run, bindings.RunCompleted); err != nil {
			tb.Fatal(err)
		}
		if err := s.ReleaseLease(ctx, tenant, run, "w"); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestPruneThenReuseRunIDs: a Prune of one tenant leaves another's runs
// alone, and a pruned run id starts afresh when reused (nothing of the
// pruned run is left: its journal numbering starts again at 1).
func TestPruneThenReuseRunIDs(t *testing.T) {
	clock := bindingstest.NewClock(time.Time{})
	s := memstore.New(&memstore.Options{Now: clock.Now})
	seedFinished(t, s, "a", 3, 2)
	seedFinished(t, s, "b", 2, 1)
	clock.Advance(time.Hour)
	st, err := s.Prune(t.Context(), "a", clock.Now())
	if err != nil || st != (bindings.PruneStats{Runs: 3, JournalEntries: 6, Snapshots: 3, Approvals: 3}) {
		t.Fatalf("Prune a: %+v, %v", st, err)
	}
	// The same run ids start afresh: nothing of the pruned runs is left.
	seedFinished(t, s, "a", 3, 1)
	j, err := s.ReadJournal(t.Context(), "a", "r0")
	if err != nil || len(j) != 1 || j[0].Seq != 1 {
		t.Fatalf("journal of a reused run id: %+v, %v", j, err)
	}
	clock.Advance(time.Hour)
	st, err = s.Prune(t.Context(), "b", clock.Now())
	if err != nil || st != (bindings.PruneStats{Runs: 2, JournalEntries: 2, Snapshots: 2, Approvals: 2}) {
		t.Fatalf("Prune b: %+v, %v", st, err)
	}
}

// BenchmarkPrune deletes 1,000 finished runs of 20 journal entries each
// per iteration, with another tenant's 5,000 runs in the store.
func BenchmarkPrune(b *testing.B) {
	const runs, entries = 1000, 20
	clock := bindingstest.NewClock(time.Time{})
	s := memstore.New(&memstore.Options{Now: clock.Now})
	seedFinished(b, s, "bystander", 5000, entries)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		tenant := fmt.Sprintf("bench-%d", i)
		seedFinished(b, s, tenant, runs, entries)
		clock.Advance(time.Second)
		b.StartTimer()
		st, err := s.Prune(context.Background(), tenant, clock.Now())
		if err != nil || st.Runs != runs {
			b.Fatalf("Prune: %+v, %v", st, err)
		}
	}
	b.ReportMetric(float64(runs*b.N)/b.Elapsed().Seconds(), "runs/s")
}
