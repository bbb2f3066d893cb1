// Package retrievalbench is the workload of the stores' retrieval-at-scale
// benchmarks (memstore and pgstore run the same one): the vocabulary, the
// queries of each kind, the query vectors and the latency report.
package retrievalbench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
)

const (
	// Vocab is the number of terms facts are drawn from, with a Zipf-like
	// (log-uniform, P(rank r) ∝ 1/r) distribution: "term1" is in about
	// half the facts.
	Vocab = 50_000
	// Dims is the number of components of a fact's or a query's embedding.
	Dims = 256
)

// Term is a term drawn from the vocabulary's distribution by r.
func Term(r *rand.Rand) string {
	return "term" + strconv.Itoa(int(math.Exp(r.Float64()*math.Log(Vocab))))
}

// Queries are the 64 keyword queries of a kind: "rare" (one term of rank
// 5,000 to 50,000), "common" (one of the three most frequent terms), or
// any other kind, mixed (three terms drawn from the fact distribution).
func Queries(kind string) []string {
	r := rand.New(rand.NewPCG(15, 7))
	out := make([]string, 64)
	for i := range out {
		switch kind {
		case "rare":
			out[i] = "term" + strconv.Itoa(5000+i*700)
		case "common":
			out[i] = "term" + strconv.Itoa(1+i%3)
		default:
			out[i] = fmt.Sprintf("%s %s %s", Term(r), Term(r), Term(r))
		}
	}
	return out
}

// Embeddings are 64 query vectors of Dims uniform components in [-1, 1).
func Embeddings() [][]float32 {
	r := rand.New(rand.NewPCG(15, 8))
	out := make([][]float32, 64)
	for i := range out {
		out[i] = Vector(r)
	}
	return out
}

// Vector is Dims uniform components in [-1, 1) drawn by r.
func Vector(r *rand.Rand) []float32 {
	v := make([]float32, Dims)
	for j := range v {
		v[j] = float32(r.Float64()*2 - 1)
	}
	return v
}

// ReportLatency reports the p50 and p95 of samples in milliseconds.
func ReportLatency(b *testing.B, samples []time.Duration) {
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	at := func(p float64) float64 {
		return float64(samples[min(len(samples)-1, int(p*float64(len(samples))))]) / 1e6
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.95), "p95-ms")
}
