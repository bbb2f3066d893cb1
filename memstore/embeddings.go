package memstore

import (
	"context"
	"hash/fnv"
	"math"

	"github.com/kindgi/agents/bindings"
)

// DefaultHashDims is the dimension of HashEmbeddings vectors when Dims is 0.
const DefaultHashDims = 64

// HashEmbeddings is a toy EmbeddingRegistry for tests and examples only:
// it hashes each token of a text (Tokenize) into one of Dims buckets with a
// hash-chosen sign and normalises the sum to unit length. Texts that share
// words point the same way; it knows nothing of meaning. Every model name
// gives the same vectors. The zero value uses DefaultHashDims.
type HashEmbeddings struct {
	Dims int
}

var _ bindings.EmbeddingRegistry = HashEmbeddings{}

// Embed returns one unit vector per text (all zeros for a text without
// tokens).
func (h HashEmbeddings) Embed(ctx context.Context, model string, texts []string) ([][]float32, error) {
	if err := alive(ctx); err != nil {
		return nil, err
	}
	dims := h.Dims
	if dims <= 0 {
		dims = DefaultHashDims
	}
	out := make([][]float32, len(texts))
	for i, text := range texts {
		v := make([]float64, dims)
		for _, tok := range Tokenize(text) {
			f := fnv.New64a()
			f.Write([]byte(tok))
			sum := f.Sum64()
			sign := 1.0
			if sum>>63 == 1 {
				sign = -1
			}
			v[sum%uint64(dims)] += sign
		}
		var n float64
		for _, x := range v {
			n += x * x
		}
		n = math.Sqrt(n)
		vec := make([]float32, dims)
		for j, x := range v {
			if n > 0 {
				vec[j] = float32(x / n)
			}
		}
		out[i] = vec
	}
	return out, nil
}
