package pgstore

import (
	"testing"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
)

// TestKeywordQueryUsesTheSearchIndex checks with EXPLAIN ANALYZE that a
// keyword memory query over 20,000 facts of one tenant (and as many of
// another) finds its matches through agent_memory_facts_search_idx, the
// GIN index on the facts' tsvector, with the custom and the generic plan
// alike, rather than reading every fact of the tenant.
func TestKeywordQueryUsesTheSearchIndex(t *testing.T) {
	pool := testPool(t)
	ctx := t.Context()
	tenant := "explain-kw-" + randomID()
	// Every fact says "clause number g"; one in 2,000 also says "indemnity".
	_, err := pool.Exec(ctx, `INSERT INTO agent_memory_facts (tenant_id, id, type, text, search, created_at)
		SELECT tn, 'f' || g, 'note', txt, to_tsvector('simple', txt), now() - g * interval '1 second'
		FROM generate_series(1, 20000) AS g,
			unnest(ARRAY[$1::text, $1::text || '-other']) AS tn,
			LATERAL (SELECT 'clause number ' || g || CASE WHEN g % 2000 = 0 THEN ' indemnity' ELSE '' END AS txt) AS t`, tenant)
	if err != nil {
		t.Fatal(err)
	}
	// VACUUM moves the new rows out of the GIN index's pending list, as
	// autovacuum does on a live table (a long pending list makes the
	// planner cost the index as if it scanned that list too).
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE agent_memory_facts`); err != nil {
		t.Fatal(err)
	}
	q := bindings.MemoryQuery{TenantID: tenant, Types: []string{"note"}, Scope: agent.ScopeTenant, Limit: 5, Mode: agent.ModeKeyword, Query: "indemnity"}
	var m memoryQuery
	sql := m.build(q, tsQuery(q.Query), []float32{}, 0, q.Limit)
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		t.Run(mode, func(t *testing.T) {
			plan := explainAnalyze(t, pool, mode, sql, m.args...)
			var usesIndex bool
			var seqScan bool
			plan.walk(func(n planNode) {
				if n.IndexName == "agent_memory_facts_search_idx" {
					usesIndex = true
				}
				if n.NodeType == "Seq Scan" {
					seqScan = true
				}
			})
			if !usesIndex || seqScan {
				var n int64
				var who string
				var rls bool
				_ = pool.QueryRow(ctx, `SELECT count(*), current_user, row_security_active('agent_memory_facts') FROM agent_memory_facts`).Scan(&n, &who, &rls)
				t.Errorf("keyword query does not go through the search index (%d facts in the table, as %s, rls %v): %+v", n, who, rls, plan)
			}
		})
	}
	got, err := New(pool, nil).QueryFacts(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || got[0].Fact.ID != "f2000" {
		t.Fatalf("QueryFacts = %d facts, first %+v; want 5, newest f2000", len(got), got)
	}
}
