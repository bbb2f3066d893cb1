package pgstore

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
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

// jsonbScan's compact, which lets a write return an appended output as it
// is, holds exactly when compacted would return the document unchanged
// (and only jsonb-safe documents are reported compact).
func TestJSONBScanCompactIsCompacted(t *testing.T) {
	docs := []string{`{"a": "b c"}`, `"x y"`, `{"s":"a \" b"}`, `["\\", 1 ]`, ` 1`, `1 `, `{"k":"v"}`, `"\\\\" `, `{"a":"\t"}`,
		`{"a":1}` + "\n", "{\r\"a\":1}", `[1,2,{"b":[true,false,null]}]`, `{"x":"\u0000"}`, `{"n":1e999999}`, `"\ud800"`,
		`{"a" :1}`, `{"a": 1}`, `[ ]`, `{}`, `""`, `"é ü"`, `-0.5e+3`}
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 500 {
		d := randomDoc(r, 0)
		if i%2 == 1 { // randomDoc's strings hold no ',' or ':'
			d = strings.ReplaceAll(strings.ReplaceAll(d, ",", ", "), ":", "\n:")
		}
		docs = append(docs, d)
	}
	for _, d := range docs {
		doc := []byte(d)
		if !json.Valid(doc) {
			t.Fatalf("test document %q is not valid JSON", d)
		}
		safe, compact := jsonbScan(doc)
		if safe != jsonbSafe(doc) {
			t.Errorf("jsonbScan(%q) safe = %v, jsonbSafe %v", d, safe, !safe)
		}
		same := bytes.Equal(compacted(doc), doc)
		if compact && (!same || !safe) {
			t.Errorf("jsonbScan(%q) reports compact; compacted = %q, safe %v", d, compacted(doc), safe)
		}
		if safe && !compact && same {
			t.Errorf("jsonbScan(%q) reports not compact; compacted returns it unchanged", d)
		}
	}
}
