package memstore

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/keywords"
)

// Retrieval constants: BM25's k1 and b, and the reciprocal-rank-fusion k.
const (
	BM25K1 = 1.2
	BM25B  = 0.75
	RRFK   = 60
)

// defaultQueryLimit is the result limit when a query asks for 0.
const defaultQueryLimit = 10

func cloneFact(f bindings.Fact) bindings.Fact {
	f.Data = cloneJSON(f.Data)
	if f.Embedding != nil {
		f.Embedding = append([]float32(nil), f.Embedding...)
	}
	return f
}

// PutFact stores a fact, replacing one with the same (tenant, ID). An empty
// ID gets a generated one, a zero CreatedAt is now, and a fact with text but
// no embedding is embedded when the Store has an EmbeddingRegistry.
func (s *Store) PutFact(ctx context.Context, f bindings.Fact) (bindings.Fact, error) {
	if err := checkedCall(ctx, bindings.CheckFact(f)); err != nil {
		return bindings.Fact{}, err
	}
	f = cloneFact(f)
	if len(f.Embedding) == 0 && f.Text != "" && s.embeddings != nil {
		vs, err := s.embeddings.Embed(ctx, s.embedModel, []string{f.Text})
		if err != nil {
			return bindings.Fact{}, &agents.PersistenceError{Op: "embed fact", Err: err}
		}
		if len(vs) != 1 {
			return bindings.Fact{}, &agents.PersistenceError{Op: "embed fact: the registry returned no vector", Permanent: true}
		}
		f.Embedding = append([]float32(nil), vs[0]...)
		if err := bindings.CheckEmbedding("computed fact embedding", f.Embedding); err != nil {
			return bindings.Fact{}, err
		}
	}
	if f.CreatedAt.IsZero() {
		f.CreatedAt = s.now()
	}
	rec := newFactRec(f)

	s.memMu.Lock()
	defer s.memMu.Unlock()
	tf := s.facts[f.TenantID]
	if tf == nil {
		tf = newTenantFacts()
		s.facts[f.TenantID] = tf
	}
	id, err := s.newID(rec.f.ID, func(id string) bool { return tf.byID[id] != nil })
	if err != nil {
		return bindings.Fact{}, err
	}
	rec.f.ID = id
	tf.put(rec)
	return cloneFact(rec.f), nil
}

// filter is a query's type and scope test over one tenant's facts. The
// query's types are resolved to the tenant's interned ids once, so a fact
// is tested by its slotMeta, without reading the record, unless the scope
// is a project or a conversation.
type filter struct {
	one  uint32          // the only type's id, when the query has one type
	ids  map[uint32]bool // the types' ids, when it has several
	none bool            // no type of the query is the tenant's
	q    *bindings.MemoryQuery
}

func newFilter(q *bindings.MemoryQuery, tf *tenantFacts) filter {
	fl := filter{q: q}
	if len(q.Types) == 1 {
		fl.one = tf.types[q.Types[0]]
		fl.none = fl.one == 0
		return fl
	}
	fl.ids = make(map[uint32]bool, len(q.Types))
	for _, t := range q.Types {
		if id := tf.types[t]; id != 0 {
			fl.ids[id] = true
		}
	}
	fl.none = len(fl.ids) == 0
	return fl
}

// matchSlot reports whether the fact in slot i matches.
func (fl filter) matchSlot(tf *tenantFacts, i int32) bool {
	typ := tf.meta[i].typ
	if typ == 0 {
		return false // dead
	}
	if fl.ids == nil {
		if typ != fl.one {
			return false
		}
	} else if !fl.ids[typ] {
		return false
	}
	switch fl.q.Scope {
	case agent.ScopeSameConversation:
		return fl.q.ConversationID != "" && tf.slots[i].f.ConversationID == fl.q.ConversationID
	case agent.ScopeSameProject:
		return fl.q.ProjectID != "" && tf.slots[i].f.ProjectID == fl.q.ProjectID
	}
	return true
}

// scored is a candidate with its score.
type scored struct {
	rec   *factRec
	score float64
}

// better orders results best first: score descending, CreatedAt
// descending, ID ascending.
func better(a, b scored) int {
	switch {
	case a.score > b.score:
		return -1
	case a.score < b.score:
		return 1
	case a.rec.f.CreatedAt.After(b.rec.f.CreatedAt):
		return -1
	case a.rec.f.CreatedAt.Before(b.rec.f.CreatedAt):
		return 1
	}
	return strings.Compare(a.rec.f.ID, b.rec.f.ID)
}

// QueryFacts answers a memory query: keyword by BM25 over the fact text,
// semantic by cosine similarity to q.QueryEmbedding (facts whose embedding
// has another dimension are skipped), both by reciprocal-rank fusion
// (score Σ 1/(RRFK + rank), ranks from 1) of the two full rankings, and ""
// as the latest Limit facts of each type.
func (s *Store) QueryFacts(ctx context.Context, q bindings.MemoryQuery) ([]bindings.ScoredFact, error) {
	if err := checkedCall(ctx, bindings.CheckMemoryQuery(q)); err != nil {
		return nil, err
	}
	switch q.Scope {
	case agent.ScopeSameConversation, agent.ScopeSameProject, agent.ScopeTenant:
	default:
		return nil, invalid("unknown retrieval scope " + q.Scope)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = defaultQueryLimit
	}
	s.memMu.RLock()
	defer s.memMu.RUnlock()
	tf := s.facts[q.TenantID]
	if tf == nil {
		return []bindings.ScoredFact{}, nil
	}
	fl := newFilter(&q, tf)
	if fl.none {
		return []bindings.ScoredFact{}, nil
	}
	var res []scored
	switch q.Mode {
	case "":
		res = latestPerType(tf, fl, limit)
	case agent.ModeKeyword:
		res = bm25(tf, fl, q.Query, limit)
	case agent.ModeSemantic:
		res = cosine(tf, fl, q.QueryEmbedding, limit)
	case agent.ModeBoth:
		res = top(fuse(bm25(tf, fl, q.Query, -1), cosine(tf, fl, q.QueryEmbedding, -1)), limit)
	}
	out := make([]bindings.ScoredFact, len(res))
	for i, r := range res {
		out[i] = bindings.ScoredFact{Fact: cloneFact(r.rec.f), Score: r.score}
	}
	return out, nil
}

// latestPerType returns the newest limit facts of each type, newest first.
func latestPerType(tf *tenantFacts, fl filter, limit int) []scored {
	byType := map[string][]scored{}
	for i, r := range tf.slots {
		if fl.matchSlot(tf, int32(i)) {
			byType[r.f.Type] = append(byType[r.f.Type], scored{rec: r})
		}
	}
	var out []scored
	for _, list := range byType {
		out = append(out, top(list, limit)...)
	}
	slices.SortFunc(out, better)
	return out
}

// scratch is a reusable score array for bm25, indexed by slot. Entries are
// zero between uses: bm25 resets the ones it touched.
var scratch = sync.Pool{New: func() any { return new([]float64) }}

// sparseScores is the share of a tenant's facts (1/sparseScores) below
// which bm25 adds up the scores of a query's postings in a map rather than
// in a slot-indexed array (which a tenant of 1,000,000 facts makes 8 MB,
// allocated again after each garbage collection empties the pool).
const sparseScores = 64

// bm25 scores the facts that share a term with query by Okapi BM25 with
// the tenant's collection statistics and idf = ln(1 + (N - n + 0.5)/(n +
// 0.5)) and returns the best k, best first (all of them when k < 0).
//
// Cost: the postings of the query's terms (at most keywords.MaxQueryTerms
// of them), not the tenant's facts: O(P + P' log k) for P postings of
// which P' match the filter, memory O(P') for the facts touched (a query
// of a term in every fact touches every fact). Each posting is a slot and
// a frequency, read in slot order together with the slot's slotMeta: a
// stream through memory, a few ns a posting.
func bm25(tf *tenantFacts, fl filter, query string, k int) []scored {
	n := float64(tf.live())
	if n == 0 {
		return nil
	}
	avgdl := float64(tf.totalLen) / n
	if avgdl == 0 {
		avgdl = 1
	}
	// At most keywords.MaxQueryTerms distinct terms, the most distinctive
	// of the query, whatever its size: bounded time.
	var terms []string
	postings := 0
	for _, t := range keywords.QueryTerms(query) {
		if tf.df[t] > 0 {
			terms = append(terms, t)
			postings += len(tf.postings[t])
		}
	}
	if len(terms) == 0 {
		return nil
	}
	// weight is a posting's BM25 term weight.
	weight := func(idf float64, p posting) float64 {
		f := float64(p.tf)
		return idf * f * (BM25K1 + 1) / (f + BM25K1*(1-BM25B+BM25B*float64(tf.meta[p.slot].length)/avgdl))
	}
	if postings*sparseScores < len(tf.slots) {
		scores := make(map[int32]float64, postings)
		for _, t := range terms {
			idf := termIDF(n, tf.df[t])
			for _, p := range tf.postings[t] {
				if fl.matchSlot(tf, p.slot) {
					scores[p.slot] += weight(idf, p)
				}
			}
		}
		sel := newSelector(k, len(scores))
		for slot, sc := range scores {
			sel.offer(scored{rec: tf.slots[slot], score: sc})
		}
		return sel.best()
	}
	sp := scratch.Get().(*[]float64)
	defer scratch.Put(sp)
	if len(*sp) < len(tf.slots) {
		*sp = make([]float64, len(tf.slots))
	}
	scores := *sp
	touched := make([]int32, 0, min(postings, len(tf.slots)))
	for _, t := range terms {
		idf := termIDF(n, tf.df[t])
		for _, p := range tf.postings[t] {
			if !fl.matchSlot(tf, p.slot) {
				continue
			}
			if scores[p.slot] == 0 {
				touched = append(touched, p.slot)
			}
			scores[p.slot] += weight(idf, p)
		}
	}
	sel := newSelector(k, len(touched))
	for _, slot := range touched {
		sel.offer(scored{rec: tf.slots[slot], score: scores[slot]})
		scores[slot] = 0
	}
	return sel.best()
}

// termIDF is BM25's idf of a term in df of n facts.
func termIDF(n float64, df int) float64 {
	d := float64(df)
	return math.Log(1 + (n-d+0.5)/(d+0.5))
}

// cosine scores the facts with an embedding of q's dimension by cosine
// similarity to q and returns the best k, best first (all of them when
// k < 0).
//
// Cost model: an exact scan, no vector index. Every fact of the tenant is
// tested against the filter and every matching fact of q's dimension d
// costs one d-term dot product (its norm is kept from PutFact), reading
// the embeddings from the tenant's contiguous slabs: O(N·d) time per query
// for N facts of the tenant, about 0.6–0.8 ns per component on this
// repository's 2-core benchmark machine (100,000 facts of 256 dimensions:
// 15–20 ms, BENCHMARKS.md "Target 7"). Memory is O(k): the best k are
// kept in a heap while scanning, nothing is allocated per fact (both mode,
// which fuses full rankings, keeps all of them). Past about 500,000 facts
// of 256 dimensions in one tenant a query costs over 100 ms, and
// retrieval then needs an approximate vector index (HNSW, IVF), which this
// reference store does not have; the scope filter (project, conversation)
// and the types bound what is ranked, not what is scanned.
func cosine(tf *tenantFacts, fl filter, q []float32, k int) []scored {
	qn := norm(q)
	if qn == 0 {
		return nil
	}
	sel := newSelector(k, 0)
	for i, r := range tf.slots {
		if r.norm == 0 || len(r.f.Embedding) != len(q) || !fl.matchSlot(tf, int32(i)) {
			continue
		}
		sel.offer(scored{rec: r, score: dot(r.f.Embedding, q) / (r.norm * qn)})
	}
	return sel.best()
}

// dot is the dot product of a and b (of a's length), accumulated in
// float64 four components at a time.
func dot(a, b []float32) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float64(a[i]) * float64(b[i])
		s1 += float64(a[i+1]) * float64(b[i+1])
		s2 += float64(a[i+2]) * float64(b[i+2])
		s3 += float64(a[i+3]) * float64(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float64(a[i]) * float64(b[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// fuse combines best-first rankings by reciprocal-rank fusion. The result
// is unordered.
func fuse(rankings ...[]scored) []scored {
	scores := map[*factRec]float64{}
	for _, ranking := range rankings {
		for i, r := range ranking {
			scores[r.rec] += 1 / float64(RRFK+i+1)
		}
	}
	out := make([]scored, 0, len(scores))
	for r, sc := range scores {
		out = append(out, scored{rec: r, score: sc})
	}
	return out
}

// top returns the best k of cands, best first (all of them when k < 0).
func top(cands []scored, k int) []scored {
	if k < 0 || len(cands) <= k {
		slices.SortFunc(cands, better)
		return cands
	}
	sel := newSelector(k, 0)
	for _, c := range cands {
		sel.offer(c)
	}
	return sel.best()
}

// selector keeps the best k candidates offered (all of them when k < 0)
// in a k-sized heap whose root is the worst kept, so ranking n candidates
// for a small k costs O(n log k) time and O(k) memory, not a full sort of
// n.
type selector struct {
	k int
	h []scored
}

// newSelector returns a selector of the best k; n is how many candidates
// are expected (a capacity hint when k < 0).
func newSelector(k, n int) *selector {
	if k < 0 {
		return &selector{k: -1, h: make([]scored, 0, n)}
	}
	return &selector{k: k, h: make([]scored, 0, min(k, n))}
}

func (s *selector) worse(i, j int) bool { return better(s.h[i], s.h[j]) > 0 }

// offer considers c.
func (s *selector) offer(c scored) {
	switch {
	case s.k < 0 || len(s.h) < s.k:
		s.h = append(s.h, c)
		if s.k >= 0 {
			s.up(len(s.h) - 1)
		}
	case s.k > 0 && better(c, s.h[0]) < 0:
		s.h[0] = c
		s.down(0)
	}
}

func (s *selector) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !s.worse(i, p) {
			return
		}
		s.h[i], s.h[p] = s.h[p], s.h[i]
		i = p
	}
}

func (s *selector) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(s.h) {
			return
		}
		w := l
		if r := l + 1; r < len(s.h) && s.worse(r, l) {
			w = r
		}
		if !s.worse(w, i) {
			return
		}
		s.h[i], s.h[w] = s.h[w], s.h[i]
		i = w
	}
}

// best returns the kept candidates, best first.
func (s *selector) best() []scored {
	slices.SortFunc(s.h, better)
	return s.h
}
