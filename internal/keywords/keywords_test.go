package keywords

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestTokenize(t *testing.T) {
	long := strings.Repeat("x", MaxTermBytes+1)
	got := Tokenize("Hello, WORLD! e-mail: a@b.c 42 " + long + " " + long[:MaxTermBytes] + " Ünïcode\x00nul")
	want := []string{"hello", "world", "e", "mail", "a", "b", "c", "42", long[:MaxTermBytes], "ünïcode", "nul"}
	if !slices.Equal(got, want) {
		t.Fatalf("Tokenize = %q, want %q", got, want)
	}
}

func TestQueryTermsKeepsSmallQueries(t *testing.T) {
	got := QueryTerms("the cat and the hat")
	if want := []string{"the", "cat", "and", "hat"}; !slices.Equal(got, want) {
		t.Fatalf("QueryTerms = %q, want %q", got, want)
	}
}

func TestQueryTermsKeepsTheMostDistinctive(t *testing.T) {
	var b strings.Builder
	// 100 short filler words, repeated, then distinctive ones of growing
	// length, one of them twice.
	for i := range 100 {
		fmt.Fprintf(&b, "w%d w%d ", i, i)
	}
	var long []string
	for i := range MaxQueryTerms + 10 {
		w := strings.Repeat("z", 10) + fmt.Sprintf("%03d", i) + strings.Repeat("q", i%5)
		long = append(long, w)
		b.WriteString(w + " ")
	}
	b.WriteString(long[0]) // long[0] now occurs twice
	got := QueryTerms(b.String())
	if len(got) != MaxQueryTerms {
		t.Fatalf("got %d terms, want %d", len(got), MaxQueryTerms)
	}
	for _, w := range got {
		if strings.HasPrefix(w, "w") {
			t.Fatalf("kept the short word %q over longer ones: %q", w, got)
		}
	}
	// Ordered by length, then by count, then by first occurrence.
	for i := 1; i < len(got); i++ {
		if len(got[i]) > len(got[i-1]) {
			t.Fatalf("term %q (len %d) after shorter %q", got[i], len(got[i]), got[i-1])
		}
	}
	if !slices.Equal(got, QueryTerms(b.String())) {
		t.Fatal("QueryTerms is not deterministic")
	}
	// Among the 13-byte words (i%5 == 0), the one that occurs twice
	// comes last.
	var shortest []string
	for _, w := range got {
		if len(w) == 13 {
			shortest = append(shortest, w)
		}
	}
	if slices.Contains(shortest, long[0]) && shortest[len(shortest)-1] != long[0] {
		t.Fatalf("the repeated term %q is not the least distinctive of its length: %q", long[0], shortest)
	}
}

func TestQueryTermsOfAHugeMessage(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 1200<<10; i++ {
		fmt.Fprintf(&b, "word%05d filler%d ", i%20000, i)
	}
	got := QueryTerms(b.String())
	if len(got) != MaxQueryTerms {
		t.Fatalf("got %d terms, want %d", len(got), MaxQueryTerms)
	}
}

func TestIndexTermsBounded(t *testing.T) {
	small := "a b a c"
	if got := IndexTerms(small); !slices.Equal(got, []string{"a", "b", "a", "c"}) {
		t.Fatalf("IndexTerms(small) = %q", got)
	}
	var b strings.Builder
	for i := 0; b.Len() < 2<<20; i++ {
		fmt.Fprintf(&b, "t%d t%d ", i, i)
	}
	got := IndexTerms(b.String())
	size := 0
	seen := map[string]bool{}
	for _, w := range got {
		if seen[w] {
			t.Fatalf("term %q indexed twice in a bounded index", w)
		}
		seen[w] = true
		size += indexCost(w, 1)
	}
	if size > MaxIndexSize || len(got) == 0 || got[0] != "t0" {
		t.Fatalf("bounded index: %d terms, %d bytes (max %d), first %q", len(got), size, MaxIndexSize, got[0])
	}
}

func TestTokenizeIsFieldsOfTheLowercasedText(t *testing.T) {
	for _, text := range []string{"İstanbul ÀÉÎ straße ǅemal", "Ⅻ Ⓐbc ΣΑΣ", "a\xffB\xc3", "x" + strings.Repeat("É", 200) + " y"} {
		want := slices.DeleteFunc(strings.FieldsFunc(strings.ToLower(text), notTermRune), func(w string) bool { return len(w) > MaxTermBytes })
		if got := Tokenize(text); !slices.Equal(got, want) {
			t.Errorf("Tokenize(%q) = %q, want %q", text, got, want)
		}
	}
}

func FuzzTokenize(f *testing.F) {
	f.Add("İstanbul ÀÉÎ straße")
	f.Fuzz(func(t *testing.T, text string) {
		want := slices.DeleteFunc(strings.FieldsFunc(strings.ToLower(text), notTermRune), func(w string) bool { return len(w) > MaxTermBytes })
		if got := Tokenize(text); !slices.Equal(got, want) {
			t.Fatalf("Tokenize(%q) = %q, want %q", text, got, want)
		}
	})
}
