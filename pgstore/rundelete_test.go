package pgstore

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/kindgi/agents/bindings"
)

// TestDeletingARunDeletesItsJournal holds the journal's replacement for a
// foreign key (agent_runs_journal_delete): a run deleted by any statement
// takes its entries with it and no other run's, so a later run created
// under the same id starts with an empty journal; and no entry is stored
// for a run that does not exist.
func TestDeletingARunDeletesItsJournal(t *testing.T) {
	ctx := t.Context()
	s := New(testPool(t), nil)
	tenant := uniqueTenant("run-delete")
	start := func(run string) {
		t.Helper()
		if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: run, FlowID: "f", FlowVersion: "1"}); err != nil {
			t.Fatal(err)
		}
	}
	appendStep := func(run, key string) error {
		_, _, err := s.AppendStep(ctx, bindings.AppendStepInput{TenantID: tenant, RunID: run, Entry: bindings.JournalEntry{Key: key, Status: bindings.StepCompleted, Output: []byte(`{"ok":true}`)}})
		return err
	}
	entries := func(run string) int {
		t.Helper()
		var n int
		if err := testPool(t).QueryRow(ctx, `SELECT count(*) FROM agent_run_journal WHERE tenant_id = $1 AND run_id = $2`, tenant, run).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, run := range []string{"r1", "r2", "r3"} {
		start(run)
		for _, key := range []string{"a", "b"} {
			if err := appendStep(run, key); err != nil {
				t.Fatal(err)
			}
		}
	}
	// One statement deleting one run, another deleting two of them, each
	// in a transaction under the tenant, as an operator's would be.
	for _, del := range [][]string{{"r1"}, {"r2", "r3"}} {
		err := pgx.BeginFunc(ctx, testPool(t), func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT set_config('kindgi.tenant_id', $1, true)`, tenant); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `DELETE FROM agent_runs WHERE tenant_id = $1 AND id = ANY($2)`, tenant, del)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, run := range []string{"r1", "r2", "r3"} {
			deleted := run <= del[len(del)-1]
			if n := entries(run); deleted && n != 0 || !deleted && n != 2 {
				t.Fatalf("after deleting %v: run %s has %d entries", del, run, n)
			}
		}
	}
	start("r1")
	got, err := s.ReadJournal(ctx, tenant, "r1")
	if err != nil || len(got) != 0 {
		t.Fatalf("journal of a new run under a deleted run's id: %+v, %v", got, err)
	}
	if err := appendStep("missing", "a"); err == nil {
		t.Fatal("an entry of a run that does not exist was appended")
	}
	if n := entries("missing"); n != 0 {
		t.Fatalf("%d entries stored for a run that does not exist", n)
	}
}
