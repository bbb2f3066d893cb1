package memstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/retrievalbench"
	"github.com/kindgi/agents/memstore"
)

// Retrieval at scale (issue 15, target 7), the same workload as pgstore's
// BenchmarkRetrievalKeyword and BenchmarkRetrievalSemantic
// (internal/retrievalbench): N facts of one tenant plus N/4 of another,
// each of 6 to 20 terms drawn from a vocabulary of retrievalbench.Vocab
// terms with a Zipf-like distribution ("term1" is in about half the
// facts), and, for semantic queries, retrievalbench.Dims random components.

// seededStores keeps one store per (size, embeddings) for the benchmarks
// of one run.
var seededStores = map[string]*memstore.Store{}

func retrievalStore(b *testing.B, n int, embeddings bool) *memstore.Store {
	b.Helper()
	key := fmt.Sprint(n, embeddings)
	if s := seededStores[key]; s != nil {
		return s
	}
	ctx := context.Background()
	s := memstore.New(nil)
	r := rand.New(rand.NewPCG(uint64(n), 15))
	var text strings.Builder
	start := time.Now()
	for _, tenant := range []struct {
		id string
		n  int
	}{{"t", n}, {"other", n / 4}} {
		for g := 1; g <= tenant.n; g++ {
			text.Reset()
			for j := range 6 + (g*7+len(tenant.id))%15 {
				if j > 0 {
					text.WriteByte(' ')
				}
				text.WriteString(retrievalbench.Term(r))
			}
			f := bindings.Fact{TenantID: tenant.id, ID: "f" + strconv.Itoa(g), Type: "note", ProjectID: "p" + strconv.Itoa(g%10),
				Text: text.String(), CreatedAt: time.Unix(int64(g), 0)}
			if embeddings {
				f.Embedding = retrievalbench.Vector(r)
			}
			if _, err := s.PutFact(ctx, f); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Logf("seeded %d facts (+%d of another tenant, embeddings %v) in %v", n, n/4, embeddings, time.Since(start).Round(time.Millisecond))
	seededStores[key] = s
	return s
}

// BenchmarkRetrievalKeyword: a keyword query (BM25), limit 10, over N
// facts of one tenant, by query kind.
//
//	go test ./memstore -run '^$' -bench RetrievalKeyword -benchtime 200x
func BenchmarkRetrievalKeyword(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run("facts="+strconv.Itoa(n), func(b *testing.B) {
			s := retrievalStore(b, n, false)
			for _, kind := range []string{"rare", "mixed", "common"} {
				qs := retrievalbench.Queries(kind)
				b.Run("query="+kind, func(b *testing.B) {
					benchRetrieval(b, s, func(i int) bindings.MemoryQuery {
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
//	go test ./memstore -run '^$' -bench RetrievalSemantic -benchtime 100x
func BenchmarkRetrievalSemantic(b *testing.B) {
	embs := retrievalbench.Embeddings()
	for _, n := range []int{10_000, 100_000} {
		b.Run("facts="+strconv.Itoa(n), func(b *testing.B) {
			s := retrievalStore(b, n, true)
			benchRetrieval(b, s, func(i int) bindings.MemoryQuery {
				return bindings.MemoryQuery{Mode: agent.ModeSemantic, QueryEmbedding: embs[i%len(embs)]}
			})
		})
	}
}

// benchRetrieval runs the queries, each a fresh one of the rotation, and
// reports their latency's p50 and p95 in milliseconds.
func benchRetrieval(b *testing.B, s *memstore.Store, query func(i int) bindings.MemoryQuery) {
	ctx := context.Background()
	var samples []time.Duration
	b.ReportAllocs()
	cpu := startCPU(b)
	i := 0
	for b.Loop() {
		q := query(i)
		i++
		q.TenantID, q.Types, q.Scope, q.Limit = "t", []string{"note"}, agent.ScopeTenant, 10
		start := time.Now()
		res, err := s.QueryFacts(ctx, q)
		samples = append(samples, time.Since(start))
		if err != nil {
			b.Fatalf("%d results, %v", len(res), err)
		}
		for _, f := range res {
			if f.Fact.TenantID != "t" {
				b.Fatalf("fact of tenant %s in t's results", f.Fact.TenantID)
			}
		}
	}
	cpu.stop()
	retrievalbench.ReportLatency(b, samples)
}
