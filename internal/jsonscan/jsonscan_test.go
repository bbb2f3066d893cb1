package jsonscan

import (
	"encoding/json"
	"testing"
)

func TestNumber(t *testing.T) {
	for _, tc := range []struct {
		in        string
		plain, ok bool
		end       int
	}{
		{"0", true, true, 1},
		{"-12,", true, true, 3},
		{"123456789012345", true, true, 15},
		{"1234567890123456", false, true, 16},
		{"1.5", false, true, 3},
		{"2e10]", false, true, 4},
		{"-0E-3", false, true, 5},
		{"01", true, true, 1}, // the number is 0; what follows is the caller's
		{"-", false, false, 0},
		{"1.", false, false, 0},
		{"1e+", false, false, 0},
		{".5", false, false, 0},
	} {
		s := Scanner{B: []byte(tc.in)}
		plain, ok := s.Number()
		if plain != tc.plain || ok != tc.ok || (ok && s.I != tc.end) {
			t.Errorf("Number(%q) = %v, %v at %d; want %v, %v at %d", tc.in, plain, ok, s.I, tc.plain, tc.ok, tc.end)
		}
	}
}

func TestEscapeLen(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{`\"`, 2}, {`\\`, 2}, {`\/`, 2}, {`\b`, 2}, {`\f`, 2}, {`\n`, 2}, {`\r`, 2}, {`\t`, 2},
		{`\u00e9`, 6}, {`\uABCDef`, 6},
		{`\`, 0}, {`\x`, 0}, {`\a`, 0}, {`\u00g1`, 0}, {`\u00e`, 0}, {`\U00e9`, 0},
	} {
		if got := EscapeLen([]byte("ab"+tc.in), 2); got != tc.want {
			t.Errorf("EscapeLen(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestStringsAgreeWithEncodingJSON: SkipString accepts a string exactly
// when encoding/json does; PlainString accepts those without escapes and
// returns their contents.
func TestStringsAgreeWithEncodingJSON(t *testing.T) {
	for _, in := range []string{`"plain"`, `""`, `"a\"b"`, `"\u00e9\n\/"`, `"\u00g1"`, `"\x"`, "\"tab\there\"", `"open`, "\"\xff\"", `"\`} {
		var v string
		want := json.Unmarshal([]byte(in), &v) == nil
		s := Scanner{B: []byte(in)}
		if got := s.SkipString() && s.I == len(in); got != want {
			t.Errorf("SkipString(%q) = %v, encoding/json says %v", in, got, want)
		}
		p := Scanner{B: []byte(in)}
		b, ok := p.PlainString()
		if wantPlain := want && !containsByte(in, '\\'); ok != wantPlain || (ok && string(b) != in[1:len(in)-1]) {
			t.Errorf("PlainString(%q) = %q, %v; want %v", in, b, ok, wantPlain)
		}
	}
}

func containsByte(s string, c byte) bool {
	for i := range len(s) {
		if s[i] == c {
			return true
		}
	}
	return false
}

// TestObjectPunctuation walks {"a": 1 , "b":[ ]} with Open, Key and Next.
func TestObjectPunctuation(t *testing.T) {
	s := Scanner{B: []byte(` {"a": 1 , "b":[ ]} `)}
	s.WS()
	if s.Peek() != '{' || s.Open('}') {
		t.Fatal("not an open, non-empty object")
	}
	var keys []string
	for more := true; more; {
		key, ok := s.Key()
		if !ok {
			t.Fatalf("Key at %d", s.I)
		}
		keys = append(keys, string(key))
		switch s.Peek() {
		case '1':
			if _, ok := s.Number(); !ok {
				t.Fatal("number")
			}
		case '[':
			if !s.Open(']') {
				t.Fatal("the array should be empty")
			}
		}
		if more, ok = s.Next('}'); !ok {
			t.Fatalf("Next at %d", s.I)
		}
	}
	s.WS()
	if len(keys) != 2 || keys[0] != "a" || keys[1] != "b" || s.I != len(s.B) {
		t.Errorf("keys %q, end %d of %d", keys, s.I, len(s.B))
	}
	bad := Scanner{B: []byte(`"k" 1`)}
	if _, ok := bad.Key(); ok {
		t.Error("a key without a colon was accepted")
	}
	if _, ok := (&Scanner{B: []byte(` ;`)}).Next('}'); ok {
		t.Error("Next accepted ';'")
	}
}
