package pgstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn"
)

// reportCosts reports, per b.N units of work (unit: turn, op), the round
// trips, statements and commits rt counted and the client and backend CPU
// they took (cpu and server in nanoseconds, as processCPU and backendCPU
// count them).
func reportCosts(b *testing.B, rt *roundTrips, cpu, server int64, unit string) {
	n := float64(b.N)
	queries, batches, _, _ := rt.snapshot()
	b.ReportMetric(float64(queries+batches)/n, "roundtrips/"+unit)
	stmts, writers := rt.statements()
	b.ReportMetric(float64(stmts)/n, "statements/"+unit)
	b.ReportMetric(float64(writers)/n, "commits/"+unit)
	b.ReportMetric(float64(cpu)/1e6/n, "client-cpu-ms/"+unit)
	b.ReportMetric(float64(server)/1e6/n, "backend-cpu-ms/"+unit)
}

// BenchmarkTurnWithOneToolCall runs turns (model call → tool call → model
// call) on pgstore with 1 and 8 concurrent workers, each on its own
// conversation, and reports turns per second and round trips per turn.
// Every binding call commits a transaction, so with durable commits
// (synchronous_commit=on) the disk's flush latency bounds the rate; the
// synchronous_commit=off runs show the rate without it.
func BenchmarkTurnWithOneToolCall(b *testing.B) {
	for _, syncCommit := range []string{"on", "off"} {
		for _, workers := range []int{1, 8} {
			b.Run(fmt.Sprintf("synchronous_commit=%s/workers=%d", syncCommit, workers), func(b *testing.B) {
				benchmarkTurns(b, syncCommit, workers)
			})
		}
	}
}

func benchmarkTurns(b *testing.B, syncCommit string, workers int) {
	b.ReportAllocs()
	updatesBefore := tableUpdates(b)
	pool, rt := tracedPool(b, int32(workers), "synchronous_commit", syncCommit)
	f := newTurnFixture(b, New(pool, nil))
	a := lookupAgent(b, "")
	type worker struct {
		b    turn.Bindings
		conv string
	}
	pids := backendPIDs(b, pool, workers)
	ws := make([]worker, workers)
	for i := range ws {
		ws[i] = worker{b: f.bindings(), conv: f.open(b, a)}
		// Warm up: prepare the statements on the connections.
		if _, err := f.invoke(context.Background(), ws[i].b, a, ws[i].conv); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	var failed atomic.Value
	rt.reset()
	b.ResetTimer()
	cpu, server := processCPU(), backendCPU(pids)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range ws {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				res, err := f.invoke(context.Background(), ws[i].b, a, ws[i].conv)
				if err == nil && res.Status != turn.StatusCompleted {
					err = fmt.Errorf("turn %s", res.Status)
				}
				if err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu, server = processCPU()-cpu, backendCPU(pids)-server
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "turns/s")
	reportCosts(b, rt, cpu, server, "turn")
	// The backends flush their table statistics when they exit: close the
	// pool and wait for them before reading the counters.
	pool.Close()
	waitBackendsGone(b, pids)
	updates := tableUpdates(b)
	for _, t := range []struct{ table, unit string }{{"agent_runs", "runs"}, {"agent_conversations", "convs"}} {
		d := updates[t.table].sub(updatesBefore[t.table])
		b.ReportMetric(float64(d.updates)/float64(b.N), t.unit+"-updates/turn")
		b.ReportMetric(float64(d.hot)/float64(b.N), t.unit+"-hot-updates/turn")
	}
}

// updateCounts are a table's row updates and, of them, the HOT ones
// (pg_stat_user_tables n_tup_upd and n_tup_hot_upd).
type updateCounts struct{ updates, hot int64 }

func (c updateCounts) sub(o updateCounts) updateCounts {
	return updateCounts{c.updates - o.updates, c.hot - o.hot}
}

// tableUpdates reads the test database's cumulative update counts per
// table, as flushed by the backends so far (a backend flushes at most once
// a second while busy, and when it exits). Measured over a benchmark run
// whose backends have exited (waitBackendsGone), they include its set-up
// (fixture, warm-up turns): a few rows next to b.N turns.
func tableUpdates(b *testing.B) map[string]updateCounts {
	b.Helper()
	rows, err := testPool(b).Query(context.Background(),
		"SELECT relname, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE schemaname = current_schema()")
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	m := map[string]updateCounts{}
	for rows.Next() {
		var name string
		var c updateCounts
		if err := rows.Scan(&name, &c.updates, &c.hot); err != nil {
			b.Fatal(err)
		}
		m[name] = c
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return m
}

// waitBackendsGone waits until none of the backends pids is listed in
// pg_stat_activity any more.
func waitBackendsGone(b *testing.B, pids []int) {
	b.Helper()
	for range 500 {
		var n int
		if err := testPool(b).QueryRow(context.Background(),
			"SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)", pids).Scan(&n); err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Fatalf("backends %v still running", pids)
}

// backendPIDs opens n connections of pool at once (so the benchmark's
// workers find them open) and returns their backends' process ids.
func backendPIDs(b *testing.B, pool *pgxpool.Pool, n int) []int {
	b.Helper()
	pids := make([]int, n)
	conns := make([]*pgxpool.Conn, n)
	for i := range conns {
		c, err := pool.Acquire(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		conns[i] = c
		if err := c.QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&pids[i]); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range conns {
		c.Release()
	}
	return pids
}

// BenchmarkAppendStep appends journal entries to one run.
func BenchmarkAppendStep(b *testing.B) {
	b.ReportAllocs()
	s := New(testPool(b), nil)
	ctx := context.Background()
	tenant := "bench-" + randomID()
	if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: "r1", FlowID: "f", FlowVersion: "1", Owner: "o", LeaseTTL: time.Hour}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		_, _, err := s.AppendStep(ctx, bindings.AppendStepInput{TenantID: tenant, RunID: "r1", Owner: "o", Entry: bindings.JournalEntry{
			Key: fmt.Sprintf("agent-loop/%d/model-call", i), Node: "model-call", Status: bindings.StepCompleted, Output: []byte(`{"text":"hello"}`),
		}})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadLast20Messages reads the last 20 messages of a conversation
// of 10 and of 100,000 messages: the cost should not depend on the length.
func BenchmarkReadLast20Messages(b *testing.B) {
	for _, n := range []int{10, 100_000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			pool := testPool(b)
			s := New(pool, nil)
			ctx := context.Background()
			tenant := "bench-" + randomID()
			if _, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, ID: "c", AgentID: "a", AgentVersion: "1.0.0"}); err != nil {
				b.Fatal(err)
			}
			if _, err := pool.Exec(ctx, `INSERT INTO agent_conversation_messages (tenant_id, conversation_id, id, seq, role, content, created_at)
				SELECT $1, 'c', 'm' || g, g, 'user', 'message number ' || g, now() FROM generate_series(1, $2::int) AS g`, tenant, n); err != nil {
				b.Fatal(err)
			}
			if _, err := pool.Exec(ctx, `ANALYZE agent_conversation_messages`); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				msgs, err := s.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: tenant, ConversationID: "c", Limit: 20})
				if err != nil || len(msgs) != min(20, n) {
					b.Fatalf("%d messages, %v", len(msgs), err)
				}
			}
		})
	}
}

// BenchmarkQueryFactsKeyword ranks 10,000 facts with full-text search.
func BenchmarkQueryFactsKeyword(b *testing.B) {
	pool := testPool(b)
	s := New(pool, nil)
	ctx := context.Background()
	tenant := "bench-" + randomID()
	words := []string{"payment", "penalty", "vendor", "invoice", "schedule", "annex", "delivery", "buyer", "seller", "late",
		"term", "notice", "liability", "indemnity", "warranty", "confidential", "governing", "law", "court", "fee"}
	if _, err := pool.Exec(ctx, `INSERT INTO agent_memory_facts (tenant_id, id, type, text, search, created_at)
		SELECT $1, 'f' || g, 'acme.clause', t, to_tsvector('simple', t), now() - g * interval '1 second'
		FROM generate_series(1, 10000) AS g,
		LATERAL (SELECT ($2::text[])[1 + g % 20] || ' ' || ($2::text[])[1 + (g / 20) % 20] || ' ' || ($2::text[])[1 + (g / 400) % 20] || ' clause ' || g AS t) AS x`,
		tenant, words); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE agent_memory_facts`); err != nil {
		b.Fatal(err)
	}
	benchQueryFacts(b, s, bindings.MemoryQuery{TenantID: tenant, Types: []string{"acme.clause"}, Scope: agent.ScopeTenant, Mode: agent.ModeKeyword, Query: "late payment penalty", Limit: 10})
}

// benchQueryFacts times s answering q with its 10 facts.
func benchQueryFacts(b *testing.B, s *Store, q bindings.MemoryQuery) {
	ctx := b.Context()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		got, err := s.QueryFacts(ctx, q)
		if err != nil || len(got) != 10 {
			b.Fatalf("%d facts, %v", len(got), err)
		}
	}
}

// BenchmarkQueryFactsHugeQuery ranks 10,000 facts, each holding some of
// the query's words, for a 1.2 MiB query of 20,000 distinct words (which
// failed with "tsquery too big" or exhausted the server's stack when every
// word was searched for): pgstore searches for its 64 most distinctive
// terms, one statement.
func BenchmarkQueryFactsHugeQuery(b *testing.B) {
	pool := testPool(b)
	ctx := b.Context()
	s := New(pool, nil)
	tenant := "bench-huge-" + randomID()
	for i := range 10_000 {
		text := fmt.Sprintf("word%d word%d word%d clause", i, i+10000, (i*7)%20000)
		if _, err := s.PutFact(ctx, bindings.Fact{TenantID: tenant, ID: fmt.Sprint(i), Type: "clause", Text: text, CreatedAt: time.Unix(int64(i), 0)}); err != nil {
			b.Fatal(err)
		}
	}
	// As autovacuum would: the planner then scans the 10,000 facts once
	// rather than through the type index with a stale estimate.
	if _, err := pool.Exec(ctx, "ANALYZE agent_memory_facts"); err != nil {
		b.Fatal(err)
	}
	var q strings.Builder
	for i := 0; q.Len() < 1200<<10; i++ {
		fmt.Fprintf(&q, "word%d ", i%20000)
	}
	benchQueryFacts(b, s, bindings.MemoryQuery{TenantID: tenant, Types: []string{"clause"}, Scope: agent.ScopeTenant, Mode: agent.ModeKeyword, Query: q.String(), Limit: 10})
}

// BenchmarkTurnHistory is a turn (model call → tool call → model call) on a
// conversation holding 10 and 100,000 stored messages (seeded in one
// statement): the agent's history limit bounds what the turn reads, so
// the cost should not depend on the length. Compare the two ns/op (and
// cpu-ns/op, the process's CPU time per turn) run in the same invocation.
func BenchmarkTurnHistory(b *testing.B) {
	pool := testPool(b)
	s := New(pool, nil)
	f := newTurnFixture(b, s)
	a := lookupAgent(b, "")
	ctx := context.Background()
	for _, n := range []int{10, 100_000} {
		b.Run(fmt.Sprintf("stored=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			conv := "history-" + randomID()
			if _, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: turnTenant, ID: conv, AgentID: a.ID, AgentVersion: a.Version}); err != nil {
				b.Fatal(err)
			}
			if _, err := pool.Exec(ctx, `INSERT INTO agent_conversation_messages (tenant_id, conversation_id, id, seq, role, content, turn_number, created_at)
				SELECT $1, $2, 'm' || g, g, CASE WHEN g % 2 = 1 THEN 'user' ELSE 'agent' END, 'message number ' || g, (g + 1) / 2, now()
				FROM generate_series(1, $3::int) AS g`, turnTenant, conv, n); err != nil {
				b.Fatal(err)
			}
			if _, err := pool.Exec(ctx, `UPDATE agent_conversations SET message_count = $3, turn_count = ($3 + 1) / 2
				WHERE tenant_id = $1 AND id = $2`, turnTenant, conv, n); err != nil {
				b.Fatal(err)
			}
			if _, err := pool.Exec(ctx, `ANALYZE agent_conversation_messages`); err != nil {
				b.Fatal(err)
			}
			bb := f.bindings()
			if _, err := f.invoke(ctx, bb, a, conv); err != nil { // warm the statement cache
				b.Fatal(err)
			}
			b.ResetTimer()
			cpu := processCPU()
			for b.Loop() {
				res, err := f.invoke(ctx, bb, a, conv)
				if err != nil || res.Status != turn.StatusCompleted {
					b.Fatalf("turn = %+v, %v", res.Status, err)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
