package memstore_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
)

var day0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func put(t *testing.T, s *memstore.Store, facts ...bindings.Fact) {
	t.Helper()
	for _, f := range facts {
		if _, err := s.PutFact(t.Context(), f); err != nil {
			t.Fatalf("PutFact %s: %v", f.ID, err)
		}
	}
}

// storeWith is a new Store holding facts.
func storeWith(t *testing.T, facts ...bindings.Fact) *memstore.Store {
	t.Helper()
	s := memstore.New(nil)
	put(t, s, facts...)
	return s
}

// fact is the fact id of tenant t, type c, with text, created at day0.
func fact(id, text string) bindings.Fact {
	return bindings.Fact{TenantID: "t", ID: id, Type: "c", Text: text, CreatedAt: day0}
}

func keyword(t *testing.T, s *memstore.Store, query string) []bindings.ScoredFact {
	t.Helper()
	got, err := s.QueryFacts(t.Context(), bindings.MemoryQuery{TenantID: "t", Types: []string{"c"}, Scope: agent.ScopeTenant, Mode: agent.ModeKeyword, Query: query})
	if err != nil {
		t.Fatalf("QueryFacts: %v", err)
	}
	return got
}

func ids(fs []bindings.ScoredFact) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Fact.ID)
	}
	return out
}

func TestTokenize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", []string{}},
		{"Hello, World!", []string{"hello", "world"}},
		{"Payment-Terms: NET30.", []string{"payment", "terms", "net30"}},
		{"  multiple   spaces\tand\nlines ", []string{"multiple", "spaces", "and", "lines"}},
		{"Zürich café Straße", []string{"zürich", "café", "straße"}},
		{"a_b c'd", []string{"a", "b", "c", "d"}},
	} {
		if d := cmp.Diff(tc.want, memstore.Tokenize(tc.in)); d != "" {
			t.Errorf("Tokenize(%q) (-want +got):\n%s", tc.in, d)
		}
	}
}

// TestBM25Scores checks the exact Okapi BM25 figures on a tiny corpus.
func TestBM25Scores(t *testing.T) {
	s := storeWith(t,
		fact("d1", "apple apple banana"),
		fact("d2", "apple cherry"),
		fact("d3", "banana cherry date fig"),
	)
	// N=3, avgdl=3; apple: n=2, banana: n=2.
	idf := math.Log(1 + (3-2+0.5)/(2+0.5))
	term := func(tf, dl float64) float64 {
		return idf * tf * (memstore.BM25K1 + 1) / (tf + memstore.BM25K1*(1-memstore.BM25B+memstore.BM25B*dl/3))
	}
	want := map[string]float64{
		"d1": term(2, 3) + term(1, 3),
		"d2": term(1, 2),
		"d3": term(1, 4),
	}
	got := keyword(t, s, "apple banana")
	if d := cmp.Diff([]string{"d1", "d2", "d3"}, ids(got)); d != "" {
		t.Fatalf("order (-want +got):\n%s", d)
	}
	for _, g := range got {
		if math.Abs(g.Score-want[g.Fact.ID]) > 1e-12 {
			t.Errorf("%s: score %v, want %v", g.Fact.ID, g.Score, want[g.Fact.ID])
		}
	}
}

func TestBM25RareTermOutranksCommonTerm(t *testing.T) {
	s := storeWith(t,
		fact("common", "alpha one"),
		fact("rare", "zeta one"),
		fact("x1", "alpha two"),
		fact("x2", "alpha three"),
	)
	got := ids(keyword(t, s, "alpha zeta"))
	if got[0] != "rare" {
		t.Fatalf("ranking %v: the fact with the rare term should lead", got)
	}
}

func TestBM25ShorterFactRanksHigher(t *testing.T) {
	s := storeWith(t,
		bindings.Fact{TenantID: "t", ID: "long", Type: "c", Text: "indemnity and many other words in a long clause", CreatedAt: day0.Add(time.Hour)},
		fact("short", "indemnity cap"),
	)
	if d := cmp.Diff([]string{"short", "long"}, ids(keyword(t, s, "indemnity"))); d != "" {
		t.Fatalf("order (-want +got):\n%s", d)
	}
}

func TestPutFactReplacementUpdatesStatistics(t *testing.T) {
	s := storeWith(t, fact("f", "new old words"))
	put(t, s, fact("f", "new"))
	put(t, s, fact("g", "new"))
	got := keyword(t, s, "new")
	// Two facts of one term each: avgdl 1, n 2, N 2.
	idf := math.Log(1 + (2-2+0.5)/(2+0.5))
	if len(got) != 2 || math.Abs(got[0].Score-idf) > 1e-12 {
		t.Fatalf("after replacement: %+v, want two facts scoring %v", got, idf)
	}
	if got := keyword(t, s, "old"); len(got) != 0 {
		t.Fatalf("replaced text still indexed: %v", ids(got))
	}
}

func TestPutFactEmbedsTextWithTheRegistry(t *testing.T) {
	emb := memstore.HashEmbeddings{Dims: 16}
	s := memstore.New(&memstore.Options{Embeddings: emb, EmbeddingModel: "toy"})
	f, err := s.PutFact(t.Context(), bindings.Fact{TenantID: "t", ID: "f", Type: "c", Text: "late payment fee"})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := emb.Embed(t.Context(), "toy", []string{"late payment fee"})
	if d := cmp.Diff(want[0], f.Embedding); d != "" {
		t.Fatalf("embedding (-want +got):\n%s", d)
	}
	given := []float32{1, 0}
	f, err = s.PutFact(t.Context(), bindings.Fact{TenantID: "t", ID: "g", Type: "c", Text: "kept", Embedding: given})
	if err != nil || !cmp.Equal(f.Embedding, given) {
		t.Fatalf("a given embedding was replaced: %v %v", f.Embedding, err)
	}
	q, _ := emb.Embed(t.Context(), "toy", []string{"payment fee"})
	got, err := s.QueryFacts(t.Context(), bindings.MemoryQuery{TenantID: "t", Types: []string{"c"}, Scope: agent.ScopeTenant, Mode: agent.ModeSemantic, QueryEmbedding: q[0]})
	if err != nil || len(got) != 1 || got[0].Fact.ID != "f" || got[0].Score < 0.7 {
		t.Fatalf("semantic query over computed embeddings: %+v %v", got, err)
	}
}

type failingEmbeddings struct{}

var errEmbed = errors.New("embedding service down")

func (failingEmbeddings) Embed(context.Context, string, []string) ([][]float32, error) {
	return nil, errEmbed
}

func TestPutFactEmbeddingFailureIsPersistenceError(t *testing.T) {
	s := memstore.New(&memstore.Options{Embeddings: failingEmbeddings{}})
	_, err := s.PutFact(t.Context(), bindings.Fact{TenantID: "t", ID: "f", Type: "c", Text: "x"})
	if agents.CodeOf(err) != agents.CodePersistence || !errors.Is(err, errEmbed) {
		t.Fatalf("error %v (code %q), want persistence-error wrapping the cause", err, agents.CodeOf(err))
	}
	got, _ := s.QueryFacts(t.Context(), bindings.MemoryQuery{TenantID: "t", Types: []string{"c"}, Scope: agent.ScopeTenant})
	if len(got) != 0 {
		t.Fatalf("a failed put stored %v", ids(got))
	}
}

func TestHashEmbeddings(t *testing.T) {
	h := memstore.HashEmbeddings{}
	vs, err := h.Embed(t.Context(), "any", []string{"late payment fee", "late payment fee", "LATE, payment; fee!", "quantum zebra", ""})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs[0]) != memstore.DefaultHashDims {
		t.Fatalf("dims = %d, want %d", len(vs[0]), memstore.DefaultHashDims)
	}
	dot := func(a, b []float32) float64 {
		var s float64
		for i := range a {
			s += float64(a[i]) * float64(b[i])
		}
		return s
	}
	if n := dot(vs[0], vs[0]); math.Abs(n-1) > 1e-6 {
		t.Fatalf("norm² = %v, want 1", n)
	}
	if !cmp.Equal(vs[0], vs[1]) || !cmp.Equal(vs[0], vs[2]) {
		t.Fatal("the same words embed differently")
	}
	if dot(vs[0], vs[3]) > 0.9 {
		t.Fatalf("unrelated texts have cosine %v", dot(vs[0], vs[3]))
	}
	for _, x := range vs[4] {
		if x != 0 {
			t.Fatal("empty text has a non-zero vector")
		}
	}
}
