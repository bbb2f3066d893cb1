// Package keywords is the keyword model both reference stores (memstore
// and pgstore) share, so that they agree on what a fact is indexed under
// and which terms a query searches for, whatever the size of the text:
//
//   - Tokenize: a term is a lowercased run of letters and digits of at
//     most MaxTermBytes bytes (longer runs are no term: PostgreSQL's full
//     text search ignores words over 2047 bytes and refuses them in a
//     query).
//   - IndexTerms: the terms a fact is indexed under, bounded so that the
//     index of one fact always fits (PostgreSQL refuses a tsvector over
//     1 MiB).
//   - QueryTerms: the at most MaxQueryTerms most distinctive distinct
//     terms of a query, so that a query costs bounded time for any text
//     (a 1.2 MiB message with 20,000 distinct words made PostgreSQL fail
//     with "tsquery too big" or exhaust its stack).
package keywords

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxTermBytes is the longest term, in bytes. A run of letters and digits
// longer than this is not a term: it is neither indexed nor searched for.
const MaxTermBytes = 255

// MaxQueryTerms is how many distinct terms a keyword query searches for
// at most.
const MaxQueryTerms = 64

// MaxIndexSize bounds the index of one fact, in bytes as PostgreSQL's
// tsvector stores it (estimated by indexCost): comfortably below its
// 1 MiB limit.
const MaxIndexSize = 768 << 10

// Tokenize splits text into terms: lowercased runs of letters and digits,
// runs longer than MaxTermBytes left out, in order of occurrence.
func Tokenize(text string) []string {
	out := []string{}
	eachTerm(text, func(t string) { out = append(out, t) })
	return out
}

// eachTerm calls fn with each term of text, in order: the runs of
// strings.FieldsFunc(strings.ToLower(text), not a letter or digit) of at
// most MaxTermBytes, found without copying the text (a run is lowercased
// on its own, which copies only a run that has upper case).
func eachTerm(text string, fn func(string)) {
	emit := func(run string) {
		lower := strings.ToLower(run)
		if lower != run && strings.IndexFunc(lower, notTermRune) >= 0 {
			// Lower case made a separator (İ is i and a combining dot):
			// split as the lowercased text would be.
			for _, w := range strings.FieldsFunc(lower, notTermRune) {
				if len(w) <= MaxTermBytes {
					fn(w)
				}
			}
			return
		}
		if len(lower) <= MaxTermBytes {
			fn(lower)
		}
	}
	start := -1
	for i, r := range text {
		if !notTermRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			emit(text[start:i])
			start = -1
		}
	}
	if start >= 0 {
		emit(text[start:])
	}
}

func notTermRune(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// indexCost is what a term seen n times costs in a tsvector: its entry (4
// bytes), its text, a 2-byte alignment pad at most, the position count and
// one 2-byte position per occurrence (PostgreSQL keeps at most 256).
func indexCost(term string, n int) int {
	return 4 + len(term) + 1 + 2 + 2*min(n, 256)
}

// IndexTerms returns the terms a fact with this text is indexed under:
// all of Tokenize(text) when their index fits in MaxIndexSize; otherwise
// (only a text of hundreds of KiB of distinct words comes near it) each
// distinct term once, in order of first occurrence, as long as they fit.
// A fact matches a query when they share an indexed term.
func IndexTerms(text string) []string {
	toks := Tokenize(text)
	counts := make(map[string]int, min(len(toks), 1024))
	for _, t := range toks {
		counts[t]++
	}
	size := 0
	for t, n := range counts {
		size += indexCost(t, n)
	}
	if size <= MaxIndexSize {
		return toks
	}
	out := make([]string, 0, len(counts))
	size = 0
	for _, t := range toks {
		if _, ok := counts[t]; !ok {
			continue // seen already
		}
		if c := indexCost(t, 1); size+c <= MaxIndexSize {
			size += c
			out = append(out, t)
		}
		delete(counts, t)
	}
	return out
}

// QueryTerms returns the distinct terms of a query text that a keyword
// query searches for: all of them, in order of first occurrence, when
// there are at most MaxQueryTerms; otherwise the MaxQueryTerms most
// distinctive, most distinctive first. A term is more distinctive than another when it is longer (in
// characters: long words are rare words, short ones are the "a", "is" and
// "of" that every text has), then when it occurs fewer times in the query,
// then when it occurs first. The choice depends on the query alone (not on
// what a store holds), so every store searches for the same terms, and it
// costs O(n log n) in the query's length.
func QueryTerms(text string) []string {
	type term struct {
		text         string
		runes, count int
		first        int
	}
	index := map[string]int{}
	var terms []term
	i := 0
	eachTerm(text, func(t string) {
		defer func() { i++ }()
		if j, ok := index[t]; ok {
			terms[j].count++
			return
		}
		index[t] = len(terms)
		terms = append(terms, term{text: t, runes: utf8.RuneCountInString(t), count: 1, first: i})
	})
	if len(terms) > MaxQueryTerms {
		slices.SortFunc(terms, func(a, b term) int {
			if c := cmp.Compare(b.runes, a.runes); c != 0 {
				return c
			}
			if c := cmp.Compare(a.count, b.count); c != 0 {
				return c
			}
			return cmp.Compare(a.first, b.first)
		})
		terms = terms[:MaxQueryTerms]
	}
	out := make([]string, len(terms))
	for i, t := range terms {
		out[i] = t.text
	}
	return out
}
