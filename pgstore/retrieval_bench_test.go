package pgstore

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/retrievalbench"
)

// Retrieval at scale (issue 15, target 7): keyword and semantic memory
// queries over N facts of one tenant, with another tenant's N/4 facts in
// the same table so that tenancy filtering is exercised.
//
// The facts live in a database of their own, retrievalBenchDB, that the
// benchmarks keep between runs: each size is seeded once, by one INSERT …
// SELECT generate_series in one transaction (the GIN index rebuilt after
// it), and marked done in retrievalBenchSeeded, so a second run reuses it.
// Drop the database to seed afresh.
//
// Fact text: 6 to 20 terms drawn from a vocabulary of retrievalbench.Vocab terms
// with a Zipf-like (log-uniform, P(rank r) ∝ 1/r) distribution: the term
// of rank r is "term<r>", so "term1" is in about half the facts and a term
// of rank 20,000 in one fact in 15,000. Embeddings (sizes up to 100,000):
// retrievalbench.Dims uniform random components.
const retrievalBenchDB = "kindgi_retrieval_bench"

// retrievalTenant is the tenant holding n facts.
func retrievalTenant(n int) string { return "bench-facts-" + strconv.Itoa(n) }

var retrievalPool struct {
	once sync.Once
	pool *pgxpool.Pool
	err  error
}

// retrievalBenchPool returns a pool on retrievalBenchDB, created and
// migrated when missing.
func retrievalBenchPool(b *testing.B) *pgxpool.Pool {
	b.Helper()
	testPool(b)
	retrievalPool.once.Do(func() {
		ctx := context.Background()
		admin, err := pgx.Connect(ctx, testEnv.adminURL)
		if err != nil {
			retrievalPool.err = err
			return
		}
		defer admin.Close(ctx)
		var exists bool
		if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, retrievalBenchDB).Scan(&exists); err != nil {
			retrievalPool.err = err
			return
		}
		if !exists {
			if _, err := admin.Exec(ctx, "CREATE DATABASE "+retrievalBenchDB); err != nil {
				retrievalPool.err = err
				return
			}
		}
		cfg := testEnv.config.Copy()
		cfg.ConnConfig.Database = retrievalBenchDB
		cfg.MaxConns = 4
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err == nil {
			err = Migrate(ctx, pool)
		}
		if err == nil {
			_, err = pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS retrievalBenchSeeded (tenant_id text PRIMARY KEY, facts int NOT NULL, embeddings bool NOT NULL, seeded_at timestamptz NOT NULL DEFAULT now(), seconds float8 NOT NULL)`)
		}
		retrievalPool.pool, retrievalPool.err = pool, err
	})
	if retrievalPool.err != nil {
		b.Fatal(retrievalPool.err)
	}
	return retrievalPool.pool
}

// seedRetrieval makes sure the tenant of n facts exists (with embeddings
// when embeddings is set), seeding it once.
func seedRetrieval(b *testing.B, pool *pgxpool.Pool, n int, embeddings bool) {
	b.Helper()
	ctx := context.Background()
	tenant := retrievalTenant(n)
	var have bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM retrievalBenchSeeded WHERE tenant_id = $1 AND facts = $2 AND (embeddings OR NOT $3))`, tenant, n, embeddings).Scan(&have); err != nil {
		b.Fatal(err)
	}
	if have {
		return
	}
	start := time.Now()
	tx, err := pool.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	exec := func(sql string, args ...any) {
		b.Helper()
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			b.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`SET LOCAL maintenance_work_mem = '512MB'`)
	exec(`DELETE FROM agent_memory_facts WHERE tenant_id IN ($1, $2)`, tenant, tenant+"-other")
	exec(`DELETE FROM retrievalBenchSeeded WHERE tenant_id = $1`, tenant)
	// The GIN index is rebuilt once after the insert rather than updated
	// row by row: the same definition, read back from the catalog.
	var indexDef string
	if err := tx.QueryRow(ctx, `SELECT pg_get_indexdef('agent_memory_facts_search_idx'::regclass)`).Scan(&indexDef); err != nil {
		b.Fatal(err)
	}
	exec(`DROP INDEX agent_memory_facts_search_idx`)
	emb := `NULL::real[]`
	if embeddings {
		// g > 0 makes the subquery depend on the row, so it runs per row.
		emb = `ARRAY(SELECT (random() * 2 - 1)::real FROM generate_series(1, ` + strconv.Itoa(retrievalbench.Dims) + `) WHERE g > 0)`
	}
	exec(`INSERT INTO agent_memory_facts (tenant_id, id, type, project_id, text, embedding, embedding_norm, search, created_at)
		SELECT tn, 'f' || g, 'note', 'p' || (g % 10), txt, e,
			(SELECT sqrt(sum(x::float8 * x::float8)) FROM unnest(e) AS x), to_tsvector('simple', txt),
			timestamptz '2026-01-01' + g * interval '1 second'
		FROM (
			SELECT g, tn,
				(SELECT string_agg('term' || floor(exp(random() * ln(`+strconv.Itoa(retrievalbench.Vocab)+`)))::int, ' ')
					FROM generate_series(1, 6 + (g * 7 + length(tn)) % 15) WHERE g > 0) AS txt,
				`+emb+` AS e
			FROM (SELECT $1::text AS tn, g FROM generate_series(1, $2::int) AS g
				UNION ALL SELECT $1::text || '-other', g FROM generate_series(1, $2::int / 4) AS g) AS src
		) AS s`, tenant, n)
	exec(indexDef)
	exec(`INSERT INTO retrievalBenchSeeded (tenant_id, facts, embeddings, seconds) VALUES ($1, $2, $3, $4)`, tenant, n, embeddings, time.Since(start).Seconds())
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE agent_memory_facts`); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d facts of %s (+%d of another tenant, embeddings %v) in %v", n, tenant, n/4, embeddings, time.Since(start).Round(time.Second))
}

// BenchmarkRetrievalKeyword: a keyword query, limit 10, over N facts of
// one tenant, by query kind. Before measuring, an EXPLAIN ANALYZE of a
// rare query checks that it goes through agent_memory_facts_search_idx
// and logs its execution time.
//
//	KINDGI_TEST_DATABASE_URL=… go test ./pgstore -run '^$' -bench RetrievalKeyword -benchtime 20x
func BenchmarkRetrievalKeyword(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run("facts="+strconv.Itoa(n), func(b *testing.B) {
			pool := retrievalBenchPool(b)
			seedRetrieval(b, pool, n, n <= 100_000)
			explainKeyword(b, pool, n)
			for _, kind := range []string{"rare", "mixed", "common"} {
				b.Run("query="+kind, func(b *testing.B) {
					benchRetrieval(b, pool, n, func(i int) bindings.MemoryQuery {
						qs := retrievalbench.Queries(kind)
						return bindings.MemoryQuery{Mode: agent.ModeKeyword, Query: qs[i%len(qs)]}
					})
				})
			}
		})
	}
}

// BenchmarkRetrievalSemantic: a semantic query (a random 256-dimension
// vector), limit 10, over N facts of one tenant: an exact scan.
//
//	KINDGI_TEST_DATABASE_URL=… go test ./pgstore -run '^$' -bench RetrievalSemantic -benchtime 10x
func BenchmarkRetrievalSemantic(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run("facts="+strconv.Itoa(n), func(b *testing.B) {
			pool := retrievalBenchPool(b)
			seedRetrieval(b, pool, n, true)
			embs := retrievalbench.Embeddings()
			benchRetrieval(b, pool, n, func(i int) bindings.MemoryQuery {
				return bindings.MemoryQuery{Mode: agent.ModeSemantic, QueryEmbedding: embs[i%len(embs)]}
			})
		})
	}
}

func benchRetrieval(b *testing.B, pool *pgxpool.Pool, n int, query func(i int) bindings.MemoryQuery) {
	ctx := context.Background()
	s := New(pool, nil)
	var samples []time.Duration
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		q := query(i)
		i++
		q.TenantID, q.Types, q.Scope, q.Limit = retrievalTenant(n), []string{"note"}, agent.ScopeTenant, 10
		start := time.Now()
		res, err := s.QueryFacts(ctx, q)
		samples = append(samples, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range res {
			if f.Fact.TenantID != q.TenantID {
				b.Fatalf("fact of tenant %s in %s's results", f.Fact.TenantID, q.TenantID)
			}
		}
	}
	retrievalbench.ReportLatency(b, samples)
}

// explainKeyword runs EXPLAIN ANALYZE on a rare keyword query over the
// tenant of n facts, fails when the plan does not use the search index or
// reads the table sequentially, and logs the plan's execution time.
func explainKeyword(b *testing.B, pool *pgxpool.Pool, n int) {
	b.Helper()
	q := bindings.MemoryQuery{TenantID: retrievalTenant(n), Types: []string{"note"}, Scope: agent.ScopeTenant, Limit: 10, Mode: agent.ModeKeyword, Query: retrievalbench.Queries("rare")[0]}
	var m memoryQuery
	sql := m.build(q, tsQuery(q.Query), []float32{}, 0, q.Limit)
	var raw []byte
	if err := pool.QueryRow(context.Background(), "EXPLAIN (ANALYZE, FORMAT JSON) "+sql, m.args...).Scan(&raw); err != nil {
		b.Fatal(err)
	}
	var out []struct {
		Plan          planNode `json:"Plan"`
		ExecutionTime float64  `json:"Execution Time"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out) != 1 {
		b.Fatalf("EXPLAIN output %s: %v", raw, err)
	}
	var nodes []string
	usesIndex, seqScan := false, false
	out[0].Plan.walk(func(p planNode) {
		nodes = append(nodes, p.NodeType+" "+p.IndexName)
		usesIndex = usesIndex || p.IndexName == "agent_memory_facts_search_idx"
		seqScan = seqScan || p.NodeType == "Seq Scan"
	})
	if !usesIndex || seqScan {
		b.Fatalf("keyword query over %d facts does not go through the search index: %s", n, strings.Join(nodes, " > "))
	}
	b.Logf("EXPLAIN ANALYZE keyword %q over %d facts: %s, execution %.3f ms", q.Query, n, strings.Join(nodes, " > "), out[0].ExecutionTime)
}
