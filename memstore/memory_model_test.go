package memstore_test

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
)

// FuzzQueryFactsAgainstBruteForce checks the inverted index (with its
// replacements and compactions) against a brute-force ranking over the
// live facts: random puts that often replace an existing id, then random
// queries of every mode and scope.
func FuzzQueryFactsAgainstBruteForce(f *testing.F) {
	for _, seed := range []uint64{1, 7, 99, 2024} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		ctx := t.Context()
		rng := rand.New(rand.NewPCG(seed, ^seed))
		s := memstore.New(nil)
		words := []string{"late", "payment", "penalty", "vendor", "invoice", "notice", "term", "cap"}
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		live := map[string]bindings.Fact{}
		for i := range 300 + rng.IntN(300) {
			var text []string
			for range 1 + rng.IntN(6) {
				text = append(text, words[rng.IntN(len(words))])
			}
			fa := bindings.Fact{
				TenantID: "t", ID: fmt.Sprintf("f%02d", rng.IntN(40)), Type: []string{"a", "b"}[rng.IntN(2)],
				ProjectID: []string{"p1", "p2"}[rng.IntN(2)], ConversationID: []string{"c1", "c2", ""}[rng.IntN(3)],
				Text: fmt.Sprint(text), CreatedAt: base.Add(time.Duration(rng.IntN(20)) * time.Second),
			}
			if rng.IntN(3) > 0 {
				fa.Embedding = []float32{rng.Float32() - 0.5, rng.Float32() - 0.5, rng.Float32() - 0.5}
			}
			if _, err := s.PutFact(ctx, fa); err != nil {
				t.Fatal(err)
			}
			live[fa.ID] = fa
			_ = i
		}
		for range 20 {
			q := bindings.MemoryQuery{
				TenantID: "t", Types: [][]string{{"a"}, {"b"}, {"a", "b"}}[rng.IntN(3)],
				Scope:     []string{agent.ScopeTenant, agent.ScopeSameProject, agent.ScopeSameConversation}[rng.IntN(3)],
				ProjectID: "p1", ConversationID: "c1",
				Mode:  []string{"", agent.ModeKeyword, agent.ModeSemantic, agent.ModeBoth}[rng.IntN(4)],
				Query: words[rng.IntN(len(words))] + " " + words[rng.IntN(len(words))], Limit: rng.IntN(12),
				QueryEmbedding: []float32{rng.Float32() - 0.5, rng.Float32() - 0.5, rng.Float32() - 0.5},
			}
			checkAgainstBruteForce(t, s, live, q)
		}
	})
}

// checkAgainstBruteForce checks that s answers q as bruteForce ranks the
// live facts: the same facts in the same order, the same scores.
func checkAgainstBruteForce(t *testing.T, s *memstore.Store, live map[string]bindings.Fact, q bindings.MemoryQuery) {
	t.Helper()
	got, err := s.QueryFacts(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	want := bruteForce(live, q)
	if len(got) != len(want) {
		t.Fatalf("%+v: %d results, want %d", q, len(got), len(want))
	}
	for i := range want {
		if got[i].Fact.ID != want[i].Fact.ID || math.Abs(got[i].Score-want[i].Score) > 1e-9 {
			t.Fatalf("%+v: result %d is %s (%v), want %s (%v)", q, i, got[i].Fact.ID, got[i].Score, want[i].Fact.ID, want[i].Score)
		}
	}
}

// bruteForce ranks the live facts for q without an index.
func bruteForce(live map[string]bindings.Fact, q bindings.MemoryQuery) []bindings.ScoredFact {
	limit := q.Limit
	if limit <= 0 {
		limit = 10
	}
	in := func(f bindings.Fact) bool {
		if !slices.Contains(q.Types, f.Type) {
			return false
		}
		switch q.Scope {
		case agent.ScopeSameProject:
			return f.ProjectID == q.ProjectID
		case agent.ScopeSameConversation:
			return f.ConversationID == q.ConversationID
		}
		return true
	}
	order := func(a, b bindings.ScoredFact) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := b.Fact.CreatedAt.Compare(a.Fact.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.Fact.ID, b.Fact.ID)
	}
	// BM25 statistics are over every live fact of the tenant.
	n, total := float64(len(live)), 0
	df := map[string]int{}
	for _, f := range live {
		toks := memstore.Tokenize(f.Text)
		total += len(toks)
		seen := map[string]bool{}
		for _, tk := range toks {
			if !seen[tk] {
				seen[tk] = true
				df[tk]++
			}
		}
	}
	avgdl := float64(total) / n
	keyword := func() []bindings.ScoredFact {
		var out []bindings.ScoredFact
		var terms []string
		for _, tk := range memstore.Tokenize(q.Query) {
			if !slices.Contains(terms, tk) {
				terms = append(terms, tk)
			}
		}
		for _, f := range live {
			if !in(f) {
				continue
			}
			toks := memstore.Tokenize(f.Text)
			score, matched := 0.0, false
			for _, tk := range terms {
				tf := float64(len(slices.DeleteFunc(slices.Clone(toks), func(x string) bool { return x != tk })))
				if tf == 0 {
					continue
				}
				matched = true
				idf := math.Log(1 + (n-float64(df[tk])+0.5)/(float64(df[tk])+0.5))
				score += idf * tf * (memstore.BM25K1 + 1) / (tf + memstore.BM25K1*(1-memstore.BM25B+memstore.BM25B*float64(len(toks))/avgdl))
			}
			if matched {
				out = append(out, bindings.ScoredFact{Fact: f, Score: score})
			}
		}
		slices.SortFunc(out, order)
		return out
	}
	semantic := func() []bindings.ScoredFact {
		var out []bindings.ScoredFact
		for _, f := range live {
			if !in(f) || len(f.Embedding) != len(q.QueryEmbedding) {
				continue
			}
			var dot, na, nb float64
			for i := range f.Embedding {
				dot += float64(f.Embedding[i]) * float64(q.QueryEmbedding[i])
				na += float64(f.Embedding[i]) * float64(f.Embedding[i])
				nb += float64(q.QueryEmbedding[i]) * float64(q.QueryEmbedding[i])
			}
			if na == 0 || nb == 0 {
				continue
			}
			out = append(out, bindings.ScoredFact{Fact: f, Score: dot / (math.Sqrt(na) * math.Sqrt(nb))})
		}
		slices.SortFunc(out, order)
		return out
	}
	var out []bindings.ScoredFact
	switch q.Mode {
	case "":
		byType := map[string][]bindings.ScoredFact{}
		for _, f := range live {
			if in(f) {
				byType[f.Type] = append(byType[f.Type], bindings.ScoredFact{Fact: f})
			}
		}
		for _, l := range byType {
			slices.SortFunc(l, order)
			out = append(out, l[:min(limit, len(l))]...)
		}
		slices.SortFunc(out, order)
		return out
	case agent.ModeKeyword:
		out = keyword()
	case agent.ModeSemantic:
		out = semantic()
	case agent.ModeBoth:
		fused := map[string]float64{}
		for _, ranking := range [][]bindings.ScoredFact{keyword(), semantic()} {
			for i, r := range ranking {
				fused[r.Fact.ID] += 1 / float64(60+i+1)
			}
		}
		for id, sc := range fused {
			out = append(out, bindings.ScoredFact{Fact: live[id], Score: sc})
		}
		slices.SortFunc(out, order)
	}
	return out[:min(limit, len(out))]
}
