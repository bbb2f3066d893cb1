package bindings

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// validJSONCorpus are documents on both sides of every rule validJSON
// applies: whitespace, literals, numbers, strings (escapes, control
// characters, UTF-8), nesting and trailing bytes.
var validJSONCorpus = []string{
	`null`, `true`, `false`, `nul`, `nulll`, `True`, ` true `, "\ttrue\r\n", "\vtrue", "\u00a0true",
	`0`, `-0`, `01`, `-`, `1.`, `.5`, `1.5`, `1e5`, `1E+5`, `1e-5`, `1e`, `1e+`, `-1.5e3`, `+1`, `1.5.5`, `123456789012345678901234567890`, `0x10`, `NaN`, `Infinity`, `-Infinity`,
	`""`, `"a"`, `"\""`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\u0000"`, `"\ud800"`, `"\u12G4"`, `"\u12"`, `"\x"`, `"\'"`, `"a`, `"` + "\x01" + `"`, "\"\x7f\"", `"é"`, "\"\xe9\"", "\"\xed\xa0\x80\"", "\"\xef\xbf\xbd\"", "\"\xf0\x9f\x98\x80\"", "\"\xf0\x9f\x98\"", "\"\xc0\xaf\"",
	"\xef\xbb\xbftrue", "true\xff", "\xff",
	`[]`, `[ ]`, `[1]`, `[1,]`, `[,1]`, `[1 2]`, `[1,2]`, `[`, `]`, `[[[]]]`, `[[]`, `[]]`,
	`{}`, `{ }`, `{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":1 "b":2}`, `{"a":1,"b":[true,{"c":null}]}`, `{"a":}`, `{"a"}`, `{1:2}`, `{"a":1}}`, `{"a":[}`, `[{]`, `{]`, `[}`,
	`1 2`, `{} {}`, `"a" x`, `{"a":"b"}` + "\x00",
	strings.Repeat("[", 64) + strings.Repeat("]", 64),
	strings.Repeat("[", 65) + strings.Repeat("]", 65),
	strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100),
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat("[", 100) + strings.Repeat("]", 99),
}

func standardValid(b []byte) bool { return utf8.Valid(b) && json.Valid(b) }

func TestValidJSONMatchesStandard(t *testing.T) {
	for _, doc := range validJSONCorpus {
		if got, want := validJSON([]byte(doc)), standardValid([]byte(doc)); got != want {
			t.Errorf("validJSON(%.80q) = %v, utf8.Valid && json.Valid = %v", doc, got, want)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, doc := range validJSONCorpus {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), standardValid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, utf8.Valid && json.Valid = %v", b, got, want)
		}
	})
}

// str, which skips eight bytes at a time, accepts and ends each string
// where a byte-at-a-time reading of the same rules does, wherever its
// special bytes fall against the eight-byte steps.
func TestValidJSONStringsAgainstEveryWordPosition(t *testing.T) {
	for c := range 256 {
		for pos := range 12 {
			s := []byte(`"abcdefghijklmnop"`)
			s[1+pos] = byte(c)
			for _, doc := range [][]byte{s, append(append([]byte{'['}, s...), ']'), append([]byte(`{"k":`), append(s, '}')...)} {
				if got, want := validJSON(doc), standardValid(doc); got != want {
					t.Fatalf("validJSON(%q) = %v, utf8.Valid && json.Valid = %v", doc, got, want)
				}
			}
		}
	}
	for _, piece := range []string{"é", "🙂", "\xed\xa0\x80", "\xf0\x9f\x98", `\u00e9`, `\"`, `\\`, `\x`, "\x1f", "\x7f"} {
		for pad := range 17 {
			doc := []byte(`"` + strings.Repeat("a", pad) + piece + strings.Repeat("b", 17-pad) + `"`)
			if got, want := validJSON(doc), standardValid(doc); got != want {
				t.Fatalf("validJSON(%q) = %v, utf8.Valid && json.Valid = %v", doc, got, want)
			}
		}
	}
}
