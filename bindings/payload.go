package bindings

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	agents "github.com/kindgi/agents"
)

// CheckJSON returns an *agents.InvalidMessageError naming field when doc,
// a JSON payload a binding is asked to store (a journal entry's output, a
// snapshot's input, a message's metadata or a tool call's arguments, a
// fact's data, an approval's arguments), is not valid JSON in UTF-8 (a NaN
// or an infinity written out as a bare word is not JSON), and nil
// otherwise. An empty doc is an absent payload and valid. Every store
// holds every valid document exactly (by value: a store may reformat it),
// including strings with "\u0000" and lone surrogate escapes.
func CheckJSON(field string, doc json.RawMessage) error {
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil
	}
	if !validJSON(doc) {
		return &agents.InvalidMessageError{Reason: field + " is not valid JSON"}
	}
	return nil
}

// CheckEmbedding returns an *agents.InvalidMessageError naming field when
// the vector v holds a NaN or an infinity (cosine similarity is undefined
// for it), and nil otherwise.
func CheckEmbedding(field string, v []float32) error {
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return &agents.InvalidMessageError{Reason: fmt.Sprintf("%s[%d] is not a finite number", field, i)}
		}
	}
	return nil
}
