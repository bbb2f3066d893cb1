package memstore

import (
	"context"
	"math"
	"slices"
	"strings"
	"unicode"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
)

// Retrieval constants: BM25's k1 and b, the reciprocal-rank-fusion k, and
// the result limit when a query asks for 0.
const (
	BM25K1            = 1.2
	BM25B             = 0.75
	RRFK              = 60
	defaultQueryLimit = 10
)

// tenantFacts is one tenant's facts with an inverted index over their
// text: postings[term][factID] is the fact. Collection statistics for BM25
// (fact count, average length, document frequency) are the tenant's.
type tenantFacts struct {
	byID     map[string]*factRec
	postings map[string]map[string]*factRec
	totalLen int
}

// factRec is a stored fact with its term frequencies, length in terms,
// and embedding norm.
type factRec struct {
	f      bindings.Fact
	tf     map[string]int
	length int
	norm   float64
}

// Tokenize is the keyword tokenizer: lower case, split on every rune that
// is not a letter or a digit.
func Tokenize(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

func cloneFact(f bindings.Fact) bindings.Fact {
	f.Data = cloneJSON(f.Data)
	if f.Embedding != nil {
		f.Embedding = append([]float32(nil), f.Embedding...)
	}
	return f
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// PutFact stores a fact, replacing one with the same (tenant, ID). An empty
// ID gets a generated one, a zero CreatedAt is now, and a fact with text but
// no embedding is embedded when the Store has an EmbeddingRegistry.
func (s *Store) PutFact(ctx context.Context, f bindings.Fact) (bindings.Fact, error) {
	if err := alive(ctx); err != nil {
		return bindings.Fact{}, err
	}
	switch {
	case f.TenantID == "":
		return bindings.Fact{}, invalid("tenant id is empty")
	case f.Type == "":
		return bindings.Fact{}, invalid("fact type is empty")
	}
	f = cloneFact(f)
	if len(f.Embedding) == 0 && f.Text != "" && s.embeddings != nil {
		vs, err := s.embeddings.Embed(ctx, s.embedModel, []string{f.Text})
		if err != nil {
			return bindings.Fact{}, &agents.PersistenceError{Op: "embed fact", Err: err}
		}
		if len(vs) != 1 {
			return bindings.Fact{}, &agents.PersistenceError{Op: "embed fact: registry returned no vector"}
		}
		f.Embedding = append([]float32(nil), vs[0]...)
	}
	if f.CreatedAt.IsZero() {
		f.CreatedAt = s.now()
	}
	terms := Tokenize(f.Text)
	rec := &factRec{f: f, tf: make(map[string]int, len(terms)), length: len(terms), norm: norm(f.Embedding)}
	for _, t := range terms {
		rec.tf[t]++
	}

	s.memMu.Lock()
	defer s.memMu.Unlock()
	tf := s.facts[f.TenantID]
	if tf == nil {
		tf = &tenantFacts{byID: map[string]*factRec{}, postings: map[string]map[string]*factRec{}}
		s.facts[f.TenantID] = tf
	}
	if rec.f.ID == "" {
		for rec.f.ID == "" || tf.byID[rec.f.ID] != nil {
			rec.f.ID = s.ids()
		}
	}
	if old := tf.byID[rec.f.ID]; old != nil {
		tf.unindex(old)
	}
	tf.byID[rec.f.ID] = rec
	tf.totalLen += rec.length
	for t := range rec.tf {
		p := tf.postings[t]
		if p == nil {
			p = map[string]*factRec{}
			tf.postings[t] = p
		}
		p[rec.f.ID] = rec
	}
	return cloneFact(rec.f), nil
}

func (tf *tenantFacts) unindex(old *factRec) {
	tf.totalLen -= old.length
	for t := range old.tf {
		p := tf.postings[t]
		delete(p, old.f.ID)
		if len(p) == 0 {
			delete(tf.postings, t)
		}
	}
	delete(tf.byID, old.f.ID)
}

// filter is a query's type and scope test.
type filter struct {
	types map[string]bool
	q     *bindings.MemoryQuery
}

func (fl filter) match(f *bindings.Fact) bool {
	if !fl.types[f.Type] {
		return false
	}
	switch fl.q.Scope {
	case agent.ScopeSameConversation:
		return fl.q.ConversationID != "" && f.ConversationID == fl.q.ConversationID
	case agent.ScopeSameProject:
		return fl.q.ProjectID != "" && f.ProjectID == fl.q.ProjectID
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
// semantic by cosine similarity to q.QueryEmbedding, both by
// reciprocal-rank fusion (score Σ 1/(RRFK + rank), ranks from 1) of the
// two full rankings, and "" as the latest Limit facts of each type.
func (s *Store) QueryFacts(ctx context.Context, q bindings.MemoryQuery) ([]bindings.ScoredFact, error) {
	if err := alive(ctx); err != nil {
		return nil, err
	}
	if q.TenantID == "" {
		return nil, invalid("tenant id is empty")
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
	fl := filter{types: make(map[string]bool, len(q.Types)), q: &q}
	for _, t := range q.Types {
		fl.types[t] = true
	}

	s.memMu.RLock()
	defer s.memMu.RUnlock()
	tf := s.facts[q.TenantID]
	var res []scored
	switch q.Mode {
	case "":
		res = latestPerType(tf, fl, limit)
	case agent.ModeKeyword:
		res = bm25(tf, fl, q.Query)
	case agent.ModeSemantic:
		res = cosine(tf, fl, q.QueryEmbedding)
	case agent.ModeBoth:
		res = fuse(bm25(tf, fl, q.Query), cosine(tf, fl, q.QueryEmbedding))
	default:
		return nil, invalid("unknown retrieval mode " + q.Mode)
	}
	if q.Mode != "" && len(res) > limit {
		res = res[:limit]
	}
	out := make([]bindings.ScoredFact, len(res))
	for i, r := range res {
		out[i] = bindings.ScoredFact{Fact: cloneFact(r.rec.f), Score: r.score}
	}
	return out, nil
}

// latestPerType returns the newest limit facts of each type, newest first.
func latestPerType(tf *tenantFacts, fl filter, limit int) []scored {
	if tf == nil {
		return nil
	}
	byType := map[string][]scored{}
	for _, r := range tf.byID {
		if fl.match(&r.f) {
			byType[r.f.Type] = append(byType[r.f.Type], scored{rec: r})
		}
	}
	var out []scored
	for _, list := range byType {
		slices.SortFunc(list, better)
		out = append(out, list[:min(limit, len(list))]...)
	}
	slices.SortFunc(out, better)
	return out
}

// bm25 ranks the facts that share a term with query by Okapi BM25 with the
// tenant's collection statistics and idf = ln(1 + (N - n + 0.5)/(n + 0.5)).
func bm25(tf *tenantFacts, fl filter, query string) []scored {
	if tf == nil || len(tf.byID) == 0 {
		return nil
	}
	n := float64(len(tf.byID))
	avgdl := float64(tf.totalLen) / n
	if avgdl == 0 {
		avgdl = 1
	}
	scores := map[*factRec]float64{}
	seen := map[string]bool{}
	for _, t := range Tokenize(query) {
		if seen[t] {
			continue
		}
		seen[t] = true
		p := tf.postings[t]
		if len(p) == 0 {
			continue
		}
		df := float64(len(p))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, r := range p {
			if !fl.match(&r.f) {
				continue
			}
			f := float64(r.tf[t])
			scores[r] += idf * f * (BM25K1 + 1) / (f + BM25K1*(1-BM25B+BM25B*float64(r.length)/avgdl))
		}
	}
	out := make([]scored, 0, len(scores))
	for r, sc := range scores {
		out = append(out, scored{rec: r, score: sc})
	}
	slices.SortFunc(out, better)
	return out
}

// cosine ranks the facts with an embedding of q's dimension by cosine
// similarity to q.
func cosine(tf *tenantFacts, fl filter, q []float32) []scored {
	qn := norm(q)
	if tf == nil || qn == 0 {
		return nil
	}
	var out []scored
	for _, r := range tf.byID {
		if r.norm == 0 || len(r.f.Embedding) != len(q) || !fl.match(&r.f) {
			continue
		}
		var dot float64
		for i, x := range r.f.Embedding {
			dot += float64(x) * float64(q[i])
		}
		out = append(out, scored{rec: r, score: dot / (r.norm * qn)})
	}
	slices.SortFunc(out, better)
	return out
}

// fuse combines rankings by reciprocal-rank fusion.
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
	slices.SortFunc(out, better)
	return out
}
