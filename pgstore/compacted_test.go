package pgstore

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// compacted returns what json.Compact makes of a document with white
// space outside its strings, and the document itself otherwise.
func TestCompactedIsJSONCompact(t *testing.T) {
	docs := []string{`{"a": "b c"}`, `"x y"`, `{"s":"a \" b"}`, `["\\", 1 ]`, ` 1`, `{"k":"v"}`, `"\\\\" `, `{"a":"\t"}`,
		`not json`, `"unterminated  `, `"a" "b"`, `{"a":1}` + "\n"}
	r := rand.New(rand.NewPCG(5, 6))
	for range 300 {
		docs = append(docs, randomDoc(r, 0))
	}
	for _, d := range docs {
		want := []byte(d)
		var buf bytes.Buffer
		if json.Compact(&buf, want) == nil {
			want = buf.Bytes()
		}
		if got := compacted([]byte(d)); !bytes.Equal(got, want) {
			t.Errorf("compacted(%q) = %q, want %q", d, got, want)
		}
	}
}
