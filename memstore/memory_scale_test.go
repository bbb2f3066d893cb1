package memstore_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
)

// TestQueryFactsManyFactsAgainstBruteForce checks keyword queries over a
// tenant of thousands of facts, with replacements (so dead slots and
// compactions), against the brute-force ranking: queries of rare terms
// add up their scores in a map (few postings for the tenant's size),
// queries of common ones in the slot-indexed array.
func TestQueryFactsManyFactsAgainstBruteForce(t *testing.T) {
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(15, 7))
	s := memstore.New(nil)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	live := map[string]bindings.Fact{}
	word := func() string { return fmt.Sprintf("w%d", int(math.Exp(rng.Float64()*math.Log(2000)))) }
	for range 12_000 {
		text := ""
		for range 3 + rng.IntN(8) {
			text += word() + " "
		}
		f := bindings.Fact{TenantID: "t", ID: fmt.Sprintf("f%d", rng.IntN(6000)), Type: []string{"a", "b"}[rng.IntN(2)],
			ProjectID: []string{"p1", "p2"}[rng.IntN(2)], Text: text, CreatedAt: base.Add(time.Duration(rng.IntN(100)) * time.Second)}
		if _, err := s.PutFact(ctx, f); err != nil {
			t.Fatal(err)
		}
		live[f.ID] = f
	}
	queries := []string{"w1", "w2 w3", "w1500", "w1999 w1200", "w700 w1", "w5 w900 w1800", "nothing"}
	for _, text := range queries {
		for _, types := range [][]string{{"a"}, {"a", "b"}, {"c"}} {
			for _, scope := range []string{agent.ScopeTenant, agent.ScopeSameProject} {
				q := bindings.MemoryQuery{TenantID: "t", Types: types, Scope: scope, ProjectID: "p1", Mode: agent.ModeKeyword, Query: text, Limit: 10}
				checkAgainstBruteForce(t, s, live, q)
			}
		}
	}
}
