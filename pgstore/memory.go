package pgstore

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/keywords"
)

// defaultFactLimit is the result size of a query with Limit ≤ 0.
const defaultFactLimit = 10

// rrfK is the constant of reciprocal-rank fusion: a fact ranked r in a
// list scores 1/(rrfK + r) from it.
const rrfK = 60

const factCols = `f.tenant_id, f.id, f.type, f.project_id, f.conversation_id, f.text, f.data, f.embedding, f.created_at`

const sqlPutFact = `INSERT INTO agent_memory_facts AS f
	(tenant_id, id, type, project_id, conversation_id, text, data, embedding, embedding_norm, search, created_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, to_tsvector('simple', $11::text), $10)
	ON CONFLICT (tenant_id, id) DO UPDATE SET
		type = EXCLUDED.type, project_id = EXCLUDED.project_id, conversation_id = EXCLUDED.conversation_id,
		text = EXCLUDED.text, data = EXCLUDED.data, embedding = EXCLUDED.embedding,
		embedding_norm = EXCLUDED.embedding_norm, search = EXCLUDED.search, created_at = EXCLUDED.created_at`

// sqlCustomPlan makes the rest of a memory query's transaction plan each
// execution for its parameters. The generic plan of a keyword query cannot
// know how rare its terms are: over a tenant of 1,000,000 facts it ANDs
// the search index's bitmap with one of the tenant's every row from the
// primary key (338 ms for a term in 200 facts, against 4 ms for the custom
// plan, which reads the search index alone), and the plan cache settles on
// it after five executions of the prepared statement.
const sqlCustomPlan = `SELECT set_config('plan_cache_mode', 'force_custom_plan', true)`

// memoryQuery builds the statement of a memory query and its arguments.
type memoryQuery struct {
	args []any
}

// arg appends v to the arguments and returns its placeholder.
func (m *memoryQuery) arg(v any) string {
	m.args = append(m.args, v)
	return "$" + strconv.Itoa(len(m.args))
}

// build returns the statement for q. filter, keyword and semantic
// expressions read agent_memory_facts as f; ties break by creation time
// (newest first), then id.
func (m *memoryQuery) build(q bindings.MemoryQuery, tsq string, qemb []float32, qnorm float64, limit int) string {
	filter := "f.tenant_id = " + m.arg(q.TenantID) + " AND f.type = ANY(" + m.arg(q.Types) + "::text[])"
	switch q.Scope {
	case agent.ScopeSameConversation:
		filter += " AND f.conversation_id = " + m.arg(q.ConversationID) + "::text"
	case agent.ScopeSameProject:
		filter += " AND f.project_id = " + m.arg(q.ProjectID) + "::text"
	}
	const order = `score DESC, f.created_at DESC, f.id ASC`
	var keywordScore, keywordMatch, semanticScore, semanticMatch string
	if q.Mode == agent.ModeKeyword || q.Mode == agent.ModeBoth {
		tq := "to_tsquery('simple', " + m.arg(tsq) + "::text)"
		keywordScore = "ts_rank_cd(f.search, " + tq + ")::float8"
		keywordMatch = "f.search @@ " + tq
	}
	if q.Mode == agent.ModeSemantic || q.Mode == agent.ModeBoth {
		e, n := m.arg(qemb), m.arg(qnorm)
		semanticScore = "(SELECT sum(a::float8 * b::float8) FROM unnest(f.embedding, " + e + "::real[]) AS u(a, b)) / (f.embedding_norm * " + n + "::float8)"
		// A fact whose embedding has another dimension does not match.
		semanticMatch = "f.embedding IS NOT NULL AND f.embedding_norm > 0 AND " + n + "::float8 > 0 AND cardinality(f.embedding) = cardinality(" + e + "::real[])"
	}
	lim := m.arg(limit)
	switch q.Mode {
	case agent.ModeKeyword:
		return `SELECT ` + factCols + `, ` + keywordScore + ` AS score FROM agent_memory_facts f
			WHERE ` + filter + ` AND ` + keywordMatch + `
			ORDER BY ` + order + ` LIMIT ` + lim
	case agent.ModeSemantic:
		return `SELECT ` + factCols + `, ` + semanticScore + ` AS score FROM agent_memory_facts f
			WHERE ` + filter + ` AND ` + semanticMatch + `
			ORDER BY ` + order + ` LIMIT ` + lim
	case agent.ModeBoth:
		// Reciprocal-rank fusion of the full keyword and semantic rankings.
		return `WITH kw AS (
				SELECT f.id, row_number() OVER (ORDER BY ` + keywordScore + ` DESC, f.created_at DESC, f.id ASC) AS r
				FROM agent_memory_facts f WHERE ` + filter + ` AND ` + keywordMatch + `
			), sem AS (
				SELECT f.id, row_number() OVER (ORDER BY ` + semanticScore + ` DESC, f.created_at DESC, f.id ASC) AS r
				FROM agent_memory_facts f WHERE ` + filter + ` AND ` + semanticMatch + `
			), fused AS (
				SELECT id, sum(1.0::float8 / (` + strconv.Itoa(rrfK) + ` + r)) AS score
				FROM (SELECT id, r FROM kw UNION ALL SELECT id, r FROM sem) AS ranks
				GROUP BY id
			)
			SELECT ` + factCols + `, fused.score AS score
			FROM fused JOIN agent_memory_facts f ON f.tenant_id = $1 AND f.id = fused.id
			ORDER BY ` + order + ` LIMIT ` + lim
	default:
		// The latest facts of each type: at most limit per type.
		return `SELECT ` + factCols + `, 0::float8 AS score FROM (
				SELECT f.*, row_number() OVER (PARTITION BY f.type ORDER BY f.created_at DESC, f.id ASC) AS rn
				FROM agent_memory_facts f WHERE ` + filter + `
			) AS f
			WHERE f.rn <= ` + lim + `
			ORDER BY f.created_at DESC, f.id ASC`
	}
}

// PutFact implements bindings.MemoryStore. A fact without an embedding
// gets one from Options.Embeddings when it is set. Embeddings are stored
// as real[] (pgvector is not required): semantic queries compute cosine
// similarity in SQL.
func (s *Store) PutFact(ctx context.Context, f bindings.Fact) (bindings.Fact, error) {
	if err := bindings.CheckFact(f); err != nil {
		return bindings.Fact{}, err
	}
	if f.ID == "" {
		f.ID = s.ids()
	}
	f.CreatedAt = s.stamp(f.CreatedAt)
	f.Data = slices.Clone(f.Data)
	f.Embedding = slices.Clone(f.Embedding)
	if len(f.Embedding) == 0 && s.embed != nil && f.Text != "" {
		vecs, err := s.embed.Embed(ctx, s.model, []string{f.Text})
		if err != nil {
			return bindings.Fact{}, persistErr(ctx, "embed fact", err)
		}
		if len(vecs) == 1 {
			f.Embedding = slices.Clone(vecs[0])
		}
		if err := bindings.CheckEmbedding("computed fact embedding", f.Embedding); err != nil {
			return bindings.Fact{}, err
		}
	}
	data, err := wrapOpt("fact data", f.Data)
	if err != nil {
		return bindings.Fact{}, err
	}
	var emb []float32
	var norm *float64
	if len(f.Embedding) > 0 {
		emb = f.Embedding
		n := vectorNorm(emb)
		norm = &n
	}
	_, err = s.exec(ctx, "put fact", f.TenantID, sqlPutFact,
		f.TenantID, f.ID, f.Type, f.ProjectID, f.ConversationID, encodeText(f.Text), jsonArg(data), emb, norm, f.CreatedAt, strings.Join(keywords.IndexTerms(f.Text), " "))
	if err != nil {
		return bindings.Fact{}, err
	}
	out := f
	out.Data = slices.Clone(f.Data)
	out.Embedding = slices.Clone(f.Embedding)
	return out, nil
}

// QueryFacts implements bindings.MemoryQueryBinding. Keyword mode matches
// with PostgreSQL full-text search (the "simple" configuration: lowercased
// words, no stemming) for any of the query's terms (at most 64, the most
// distinctive: keywords.QueryTerms) and ranks by ts_rank_cd; semantic mode ranks facts that have an embedding of the
// query's dimension by cosine similarity; both fuses the two full rankings
// by reciprocal rank (k = 60); the empty mode lists the latest facts of
// each type. Each query is one statement (a keyword query is preceded, in
// the same round trip and transaction, by one that makes it planned for
// its terms: sqlCustomPlan).
//
// Cost. A keyword query reads the facts holding one of its terms through
// agent_memory_facts_search_idx (GIN) and ranks each of them with
// ts_rank_cd: O(matches), whatever the tenant's size, for rare terms (over
// 1,000,000 facts a term in 200 of them: a few ms). A term in a large share
// of the facts (over about a third, "the" in a corpus without stop words)
// makes every fact a match: PostgreSQL then reads the table sequentially,
// O(N), seconds at 1,000,000 facts (BENCHMARKS.md, "Target 7"); a GIN index
// cannot rank, so ranking by relevance needs every match read.
//
// A semantic query is an exact scan: every fact of the tenant and types
// (found through the primary key) has its real[] embedding multiplied out
// in SQL, O(N·d) at about 100–130 ns per component (about 35–45 µs per
// 256-dimension fact on the benchmark machine: 0.4 s at 10,000 facts,
// 4–6 s at 100,000). Without pgvector this is meant for a few thousand
// facts per tenant and scope; past that (or under a tight latency budget)
// a vector index (pgvector's HNSW or IVFFlat) is needed, which this store
// does not require. What bounds a query is the tenant, types and scope
// filter (only those facts are scanned) and LIMIT (a top-N sort: memory
// O(Limit)); nothing bounds the scan itself.
func (s *Store) QueryFacts(ctx context.Context, q bindings.MemoryQuery) ([]bindings.ScoredFact, error) {
	if err := bindings.CheckMemoryQuery(q); err != nil {
		return nil, err
	}
	switch q.Scope {
	case agent.ScopeTenant, "", agent.ScopeSameConversation, agent.ScopeSameProject:
	default:
		return nil, invalid("unknown memory scope " + q.Scope)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = defaultFactLimit
	}
	tsq := tsQuery(q.Query)
	qemb := q.QueryEmbedding
	if qemb == nil {
		qemb = []float32{}
	}
	qnorm := vectorNorm(qemb)
	if err := ctx.Err(); err != nil {
		return nil, persistErr(ctx, "query facts", err)
	}
	switch {
	case len(q.Types) == 0,
		q.Mode == agent.ModeKeyword && tsq == "",
		q.Mode == agent.ModeSemantic && qnorm == 0,
		q.Mode == agent.ModeBoth && tsq == "" && qnorm == 0,
		q.Scope == agent.ScopeSameConversation && q.ConversationID == "",
		q.Scope == agent.ScopeSameProject && q.ProjectID == "":
		return []bindings.ScoredFact{}, nil
	}
	var m memoryQuery
	sql := m.build(q, tsq, qemb, qnorm, limit)
	var plan *stmt // a keyword query ranks with a custom plan
	if q.Mode == agent.ModeKeyword || q.Mode == agent.ModeBoth {
		plan = &stmt{sql: sqlCustomPlan}
	}
	return writeThenReadAll(ctx, s, "query facts", q.TenantID, scanScoredFact, plan, stmt{sql, m.args})
}

// tsQuery turns a query text into a tsquery matching any of its terms
// (keywords.QueryTerms: at most 64 distinct terms, the most distinctive
// ones, so that the query is bounded in size and time for any text), each
// quoted, joined by "|". It returns "" when the text has no term.
func tsQuery(text string) string {
	var b strings.Builder
	for _, w := range keywords.QueryTerms(text) {
		if b.Len() > 0 {
			b.WriteString(" | ")
		}
		// Letters and digits need no escaping inside the quotes.
		b.WriteString("'" + w + "'")
	}
	return b.String()
}

func vectorNorm(v []float32) float64 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	return math.Sqrt(sum)
}

func scanScoredFact(row pgx.CollectableRow) (bindings.ScoredFact, error) {
	var sf bindings.ScoredFact
	f := &sf.Fact
	var data []byte
	var createdAt time.Time
	err := row.Scan(&f.TenantID, &f.ID, &f.Type, &f.ProjectID, &f.ConversationID, &f.Text, &data, &f.Embedding, &createdAt, &sf.Score)
	if err != nil {
		return sf, err
	}
	f.CreatedAt = utc(createdAt)
	f.Text = decodeText(f.Text)
	f.Data, err = unwrapOpt(data)
	return sf, err
}
