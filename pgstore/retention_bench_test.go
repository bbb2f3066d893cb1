package pgstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kindgi/agents/bindings"
)

// seedRuns inserts n runs of tenant with status, last updated at updated,
// each with entries journal entries, a snapshot and one approval expiring
// at updated plus its index in seconds, with one statement per table (the
// benchmark pool bypasses row-level security).
func seedRuns(tb testing.TB, pool *pgxpool.Pool, tenant string, status bindings.RunStatus, n, entries int, updated time.Time) {
	tb.Helper()
	ctx := context.Background()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO agent_runs (tenant_id, id, flow_id, flow_version, status, last_seq, created_at, updated_at)
			SELECT $1, 'r' || g, 'agent.turn', '1.1.0', $2, $3, $4, $4 FROM generate_series(1, $5) g`,
			[]any{tenant, string(status), entries, updated, n}},
		{`INSERT INTO agent_run_journal (tenant_id, run_id, seq, key, phase, node, status, output, at)
			SELECT $1, 'r' || g, s, 'step-' || s, 'result', 'setup', 'completed', '{"v":1,"doc":{"ok":true}}', $2
			FROM generate_series(1, $3) g, generate_series(1, $4) s`,
			[]any{tenant, updated, n, entries}},
		{`INSERT INTO agent_run_snapshots (tenant_id, run_id, flow_id, flow_version, input, created_at)
			SELECT $1, 'r' || g, 'agent.turn', '1.1.0', '{"v":1,"doc":{"userMessage":"hi"}}', $2 FROM generate_series(1, $3) g`,
			[]any{tenant, updated, n}},
		{`INSERT INTO agent_approvals (tenant_id, id, run_id, created_at, expires_at)
			SELECT $1, 'r' || g || '/a', 'r' || g, $2::timestamptz, $2::timestamptz + make_interval(secs => g) FROM generate_series(1, $3) g`,
			[]any{tenant, updated, n}},
	} {
		if _, err := pool.Exec(ctx, q.sql, q.args...); err != nil {
			tb.Fatalf("seed: %v", err)
		}
	}
	if _, err := pool.Exec(ctx, `ANALYZE agent_runs, agent_run_journal, agent_run_snapshots, agent_approvals`); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkPrune deletes 1,000 finished runs of 20 journal entries each
// (five batches) per iteration, and reports runs and journal entries
// deleted per second. Another tenant's 5,000 runs sit in the same tables.
func BenchmarkPrune(b *testing.B) {
	pool, _ := freshSchemaPool(b)
	ctx := context.Background()
	if err := Migrate(ctx, pool); err != nil {
		b.Fatal(err)
	}
	const runs, entries = 1000, 20
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	seedRuns(b, pool, "bystander", bindings.RunCompleted, 5000, entries, old)
	s := New(pool, nil)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		tenant := fmt.Sprintf("bench-%d", i)
		seedRuns(b, pool, tenant, bindings.RunCompleted, runs, entries, old)
		b.StartTimer()
		st, err := s.Prune(ctx, tenant, old.Add(time.Hour))
		if err != nil || st.Runs != runs || st.JournalEntries != runs*entries {
			b.Fatalf("Prune: %+v, %v", st, err)
		}
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(runs*b.N)/sec, "runs/s")
	b.ReportMetric(float64(runs*entries*b.N)/sec, "entries/s")
}

// BenchmarkExpiredApprovals lists one page of 100 expired approvals from
// the middle of 20,000 (of suspended runs) by keyset, as a sweep's later
// pages do.
func BenchmarkExpiredApprovals(b *testing.B) {
	pool, _ := freshSchemaPool(b)
	ctx := context.Background()
	if err := Migrate(ctx, pool); err != nil {
		b.Fatal(err)
	}
	start := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	seedRuns(b, pool, "sweep-bench", bindings.RunSuspended, 20000, 0, start)
	s := New(pool, nil)
	after := bindings.ApprovalRef{TenantID: "sweep-bench", ApprovalID: "r10000/a", RunID: "r10000", ExpiresAt: start.Add(10000 * time.Second)}
	in := bindings.ExpiredApprovalsInput{Now: start.Add(24 * time.Hour), After: after, Limit: 100}
	b.ReportAllocs()
	for b.Loop() {
		refs, err := s.ExpiredApprovals(ctx, in)
		if err != nil || len(refs) != 100 || refs[0].ApprovalID != "r10001/a" {
			b.Fatalf("ExpiredApprovals: %d refs, %v", len(refs), err)
		}
	}
}
