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
	docs = append(docs, spacedDocs(rand.New(rand.NewPCG(7, 8)), 500, "\n:")...)
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

// spacedDocs is n documents of randomDoc, every other one with white
// space: a space after each ',' and each ':' written as colon.
func spacedDocs(r *rand.Rand, n int, colon string) []string {
	docs := make([]string, n)
	for i := range docs {
		d := randomDoc(r, 0)
		if i%2 == 1 { // randomDoc's strings hold no ',' or ':'
			d = strings.ReplaceAll(strings.ReplaceAll(d, ",", ", "), ":", colon)
		}
		docs[i] = d
	}
	return docs
}

// jsonbSafeStringBytewise is jsonbSafeString one byte at a time, as it
// was before it skipped eight bytes at a time: the reference it is
// checked against (each byte is checked by the same jsonbSafeByte).
func jsonbSafeStringBytewise(doc []byte, i int) (int, bool) {
	for ; i < len(doc); i++ {
		var end, ok bool
		if i, end, ok = jsonbSafeByte(doc, i); end {
			return i, ok
		}
	}
	return i, false
}

// jsonbSafeString finds what the byte-at-a-time scan finds, wherever the
// quotes, escapes and multi-byte characters fall against its eight-byte
// steps, and whatever follows the string.
func TestJSONBSafeStringAsBytewise(t *testing.T) {
	pieces := []string{"a", "b", " ", `\"`, `\\`, `\n`, `\u00e9`, `\u0000`, `\ud83d\ude00`, `\ud800`, `\udc00x`, "é", "🙂",
		"\u0080", "\xff", "!", "#", "\x7f", "abcdefgh"}
	tails := []string{``, `"`, `",`, `"}`, `"` + strings.Repeat("x", 9), `\`}
	r := rand.New(rand.NewPCG(9, 10))
	for range 20000 {
		var b strings.Builder
		b.WriteString(`{"`)
		for range r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		b.WriteString(tails[r.IntN(len(tails))])
		doc := []byte(b.String())
		end, ok := jsonbSafeString(doc, 2)
		wantEnd, wantOK := jsonbSafeStringBytewise(doc, 2)
		if end != wantEnd || ok != wantOK {
			t.Fatalf("jsonbSafeString(%q) = %d, %v; byte at a time %d, %v", doc, end, ok, wantEnd, wantOK)
		}
	}
	for w := range 256 { // every byte in every position of a word
		for pos := range 8 {
			word := []byte("aaaaaaaa")
			word[pos] = byte(w)
			doc := append([]byte(`{"`), append(word, `"xxxxxxxx`...)...)
			end, ok := jsonbSafeString(doc, 2)
			wantEnd, wantOK := jsonbSafeStringBytewise(doc, 2)
			if end != wantEnd || ok != wantOK {
				t.Fatalf("jsonbSafeString(%q) = %d, %v; byte at a time %d, %v", doc, end, ok, wantEnd, wantOK)
			}
		}
	}
}

// compactStored makes of a document what json.Compact makes of it, and
// refuses text with more than one value at the top level (what follows a
// "doc" in an envelope with more keys), whatever the strings hold and
// wherever they fall against its eight-byte steps.
func TestCompactStoredIsJSONCompact(t *testing.T) {
	docs := []string{`{"a": "b c"}`, `"x y"`, `{"s": "a \" b"}`, `["\\", 1 ]`, ` 1`, `{"k": "v"}`, `"\\\\" `, `{"a": "\t"}`,
		`{"a": 1}` + "\n", `[1, 2, {"b": [true, false, null]}]`, `{"x": "\u0000 é 🙂"}`, `""`, `[]`, `{ }`,
		`{"long": "` + strings.Repeat(`abc \" def\\`, 20) + `"}`}
	docs = append(docs, spacedDocs(rand.New(rand.NewPCG(11, 12)), 2000, ": ")...)
	for _, d := range docs {
		var want bytes.Buffer
		if err := json.Compact(&want, []byte(d)); err != nil {
			continue
		}
		got, ok := compactStored([]byte("pre"), []byte(d))
		if !ok || string(got) != "pre"+want.String() {
			t.Fatalf("compactStored(%q) = %q, %v; json.Compact: %q", d, got, ok, want.String())
		}
	}
	for _, d := range []string{`1, "dog": 2`, `{"a": [1, 2]}, "zzzz": "x"`, `"a", "b"`, `"unterminated`, `"a \"`} {
		if got, ok := compactStored(nil, []byte(d)); ok {
			t.Errorf("compactStored(%q) = %q, ok", d, got)
		}
	}
}
