package pgstore

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings/bindingstest"
)

func TestTextEncodingRoundTrips(t *testing.T) {
	for _, s := range []string{"", "plain", "a\x00b", "\uFDD0", "\uFDD0\uFDD0", "\uFDD00", "\uFDD0x41", "\xff\xfe", "é\xc3", "\x00\uFDD0\xff"} {
		enc := encodeText(s)
		if strings.IndexByte(enc, 0) >= 0 || !utf8Valid(enc) {
			t.Errorf("encodeText(%q) = %q holds what PostgreSQL's text refuses", s, enc)
		}
		if got := decodeText(enc); got != s {
			t.Errorf("decodeText(encodeText(%q)) = %q", s, got)
		}
	}
	// Ordinary text is stored as it is.
	for _, s := range []string{"hello", "日本語 😀", "tab\tand\nnewline"} {
		if enc := encodeText(s); enc != s {
			t.Errorf("encodeText(%q) = %q, want it unchanged", s, enc)
		}
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "?") == s }

func FuzzTextEncoding(f *testing.F) {
	for _, s := range []string{"a\x00b", "\uFDD0x0", "\xff", "\uFDD0\uFDD0\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc := encodeText(s)
		if strings.IndexByte(enc, 0) >= 0 || !utf8Valid(enc) {
			t.Fatalf("encodeText(%q) = %q holds what PostgreSQL's text refuses", s, enc)
		}
		if got := decodeText(enc); got != s {
			t.Fatalf("decodeText(encodeText(%q)) = %q", s, got)
		}
	})
}

func TestWrapStoresWhatJSONBRefusesAsText(t *testing.T) {
	for _, doc := range []string{
		`"a\u0000b"`, `{"\u0000":1}`, `"\ud800"`, `"\udc00"`, `"\ud800x"`, `"\ud800\u0041"`, `1e200000`, `[1e-20000]`,
		strings.Repeat("[", 600) + strings.Repeat("]", 600), `1` + strings.Repeat("0", 2000),
	} {
		raw, err := Wrap(json.RawMessage(doc))
		if err != nil {
			t.Fatalf("Wrap(%.40s): %v", doc, err)
		}
		var env map[string]json.RawMessage
		if err := json.Unmarshal(raw, &env); err != nil || env["json"] == nil || env["doc"] != nil || string(env["v"]) != "1" {
			t.Fatalf("Wrap(%.40s) = %.80s, want {v, json}", doc, raw)
		}
		got, err := Unwrap(raw)
		if err != nil || string(got.Doc) != doc {
			t.Fatalf("Unwrap(Wrap(%.40s)) = %.40s, %v", doc, got.Doc, err)
		}
	}
	for _, doc := range []string{`"\ud83d\ude00"`, `"\u0041\\u0000"`, `1e10000`, `{"a":[1,2.5,"x"]}`, strings.Repeat("[", 500) + strings.Repeat("]", 500)} {
		raw, err := Wrap(json.RawMessage(doc))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(raw, []byte(`"doc":`)) {
			t.Fatalf("Wrap(%.40s) = %.80s, want a jsonb document", doc, raw)
		}
	}
	// A "json" envelope whose text is not JSON is malformed.
	if _, err := Unwrap([]byte(`{"v":1,"json":"{"}`)); agents.CodeOf(err) != agents.CodeMalformedEnvelope {
		t.Fatalf("Unwrap of a json envelope holding no JSON: %v", err)
	}
	if _, err := Unwrap([]byte(`{"v":1,"json":5}`)); agents.CodeOf(err) != agents.CodeMalformedEnvelope {
		t.Fatalf("Unwrap of a json envelope holding no string: %v", err)
	}
	// Not JSON, or not marshallable, is a permanent refusal.
	if _, err := Wrap(json.RawMessage(`NaN`)); agents.IsRetryable(err) || agents.CodeOf(err) != agents.CodePersistence {
		t.Fatalf("Wrap(NaN) = %v, want a permanent persistence-error", err)
	}
}

// randomDoc is a random JSON document heavy in what jsonb refuses.
func randomDoc(r *rand.Rand, depth int) string {
	switch n := r.IntN(8); {
	case n < 3 || depth > 4:
		pieces := []string{`a`, `\u0000`, `\ud800`, `\udc00`, `\ud83d\ude00`, `\\u0000`, `\"`, `\uFDD0`, `é`, `\u00e9`, `\n`}
		var b strings.Builder
		b.WriteByte('"')
		for range r.IntN(5) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		b.WriteByte('"')
		return b.String()
	case n == 3:
		return []string{`0`, `-1.5e3`, `1e16384`, `1e-16384`, `1e131072`, `12345678901234567890`, `1E+2`, `-0`}[r.IntN(8)]
	case n < 6:
		var parts []string
		for range r.IntN(4) {
			parts = append(parts, randomDoc(r, depth+1))
		}
		return "[" + strings.Join(parts, ",") + "]"
	default:
		var parts []string
		for range r.IntN(4) {
			parts = append(parts, randomDoc(r, 5)+":"+randomDoc(r, depth+1))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
}

// TestJSONBHoldsEveryWrappedDocument checks, on PostgreSQL itself, that
// jsonb accepts every envelope Wrap writes and that the document reads
// back as the same value.
func TestJSONBHoldsEveryWrappedDocument(t *testing.T) {
	pool := testPool(t)
	ctx := t.Context()
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		doc := randomDoc(r, 0)
		if !json.Valid([]byte(doc)) {
			continue // an object key that is not a string
		}
		raw, err := Wrap(json.RawMessage(doc))
		if err != nil {
			t.Fatalf("Wrap(%s): %v", doc, err)
		}
		var back []byte
		if err := pool.QueryRow(ctx, `SELECT $1::text::jsonb::text`, string(raw)).Scan(&back); err != nil {
			t.Fatalf("doc %d %s: jsonb refused its envelope %s: %v", i, doc, raw, err)
		}
		env, err := Unwrap(back)
		if err != nil {
			t.Fatalf("Unwrap(%s): %v", back, err)
		}
		var want, got any
		wd, gd := json.NewDecoder(strings.NewReader(doc)), json.NewDecoder(bytes.NewReader(env.Doc))
		wd.UseNumber()
		gd.UseNumber()
		if wd.Decode(&want) != nil || gd.Decode(&got) != nil || !bindingstest.EqualJSONValues(want, got) {
			t.Fatalf("doc %s read back as %s", doc, env.Doc)
		}
	}
}
