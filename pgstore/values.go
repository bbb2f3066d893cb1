package pgstore

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strings"
	"unicode/utf8"

	"github.com/kindgi/agents/bindings"
)

// How pgstore stores values PostgreSQL refuses.
//
// Free text (a message's content, a conversation's title, a fact's text,
// an approval's reason and comment) may hold any Go string, while
// PostgreSQL's text refuses NUL bytes (22021) and bytes that are not
// UTF-8. Such text is stored escaped with the noncharacter U+FDD0 (one
// Unicode reserves for internal use): NUL is stored as U+FDD0 '0', a byte
// that is not UTF-8 as U+FDD0 'x' and two hex digits, and U+FDD0 itself as
// U+FDD0 U+FDD0. Text holding none of the three is stored as it is, so
// the columns read as before for every ordinary text; decoding undoes the
// escapes exactly (an U+FDD0 followed by anything else is read as it is).
//
// JSON payloads are JSONB envelopes (see Wrap). jsonb refuses some valid
// JSON: the escape \u0000 (22P05), a lone surrogate escape such as
// \ud800 (22P02), numbers beyond the range of numeric (1e200000, 22003),
// and deep nesting (stack depth, 54001). A document that may hold any of
// these is stored as its JSON text inside the envelope instead,
// {"v": 1, "json": "<the document's JSON text>"}, which jsonb always
// holds; Unwrap reads both forms.

// textEscape starts an escape in stored free text.
const textEscape = '\uFDD0'

// encodeText returns s as pgstore stores free text.
func encodeText(s string) string {
	if strings.IndexByte(s, 0) < 0 && !strings.ContainsRune(s, textEscape) && utf8.ValidString(s) {
		return s
	}
	const hex = "0123456789abcdef"
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(textEscape)
			b.WriteByte('x')
			b.WriteByte(hex[s[i]>>4])
			b.WriteByte(hex[s[i]&0xf])
		case r == 0:
			b.WriteRune(textEscape)
			b.WriteByte('0')
		case r == textEscape:
			b.WriteRune(textEscape)
			b.WriteRune(textEscape)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// decodeText returns the text encodeText stored as s.
func decodeText(s string) string {
	const esc = string(textEscape)
	if !strings.Contains(s, esc) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := strings.Index(s, esc)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		s = s[i+len(esc):]
		switch {
		case strings.HasPrefix(s, esc):
			b.WriteString(esc)
			s = s[len(esc):]
		case strings.HasPrefix(s, "0"):
			b.WriteByte(0)
			s = s[1:]
		case len(s) >= 3 && s[0] == 'x' && isHex(s[1]) && isHex(s[2]):
			b.WriteByte(unhex(s[1])<<4 | unhex(s[2]))
			s = s[3:]
		default:
			b.WriteString(esc)
		}
	}
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

// Limits past which a document is stored as JSON text rather than as
// jsonb: conservative, so that jsonb never refuses what is stored as jsonb.
const (
	// jsonbMaxDepth is the deepest nesting stored as jsonb (PostgreSQL's
	// parser recurses per level and runs out of stack in the thousands).
	jsonbMaxDepth = 512
	// jsonbMaxNumber is the longest number token stored as jsonb, and
	// jsonbMaxExponent the largest exponent: numeric holds 131072 digits
	// before the point and 16383 after it.
	jsonbMaxNumber   = 1000
	jsonbMaxExponent = 10000
)

// jsonbSafe reports whether jsonb holds the valid JSON document doc: it
// has no \u0000 escape, no unpaired surrogate escape, no number beyond
// the limits above and no nesting deeper than jsonbMaxDepth.
func jsonbSafe(doc []byte) bool {
	safe, _ := jsonbScan(doc)
	return safe
}

// jsonbScan reports jsonbSafe(doc) and, in the same pass, whether doc is
// compact: no white space outside its strings, so that compacted(doc) is
// doc itself (a write returns an appended payload compacted; knowing it
// is compact spares that second pass over its bytes). compact is false
// when safe is.
func jsonbScan(doc []byte) (safe, compact bool) {
	depth := 0
	compact = true
	for i := 0; i < len(doc); i++ {
		switch c := doc[i]; {
		case c == '"':
			end, ok := jsonbSafeString(doc, i+1)
			if !ok {
				return false, false
			}
			i = end
		case c == ',' || c == ':':
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			compact = false
		case c == '[' || c == '{':
			if depth++; depth > jsonbMaxDepth {
				return false, false
			}
		case c == ']' || c == '}':
			depth--
		case c == '-' || '0' <= c && c <= '9':
			j := i
			for j < len(doc) && strings.IndexByte("+-0123456789.eE", doc[j]) >= 0 {
				j++
			}
			if !jsonbSafeNumber(doc[i:j]) {
				return false, false
			}
			i = j - 1
		}
	}
	return true, compact
}

// jsonbSafeString checks the string whose contents start at doc[i] and
// returns the index of its closing quote.
func jsonbSafeString(doc []byte, i int) (int, bool) {
	for ; i < len(doc); i++ {
		// Eight bytes at a time to the next quote or backslash (the
		// document is valid JSON: every other byte passes as it is).
		for i+8 <= len(doc) {
			if m := quoteOrBackslash(binary.LittleEndian.Uint64(doc[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(doc) {
			break
		}
		var end, ok bool
		if i, end, ok = jsonbSafeByte(doc, i); end {
			return i, ok
		}
	}
	return i, false
}

// jsonbSafeByte checks doc[i], a byte of a string's contents: a quote
// ends the string (end, ok); an escape is checked by jsonbSafeEscape and
// next is its last byte, or it ends the check (end, !ok) when refused; any
// other byte passes (next is i).
func jsonbSafeByte(doc []byte, i int) (next int, end, ok bool) {
	if doc[i] != '\\' {
		return i, doc[i] == '"', true
	}
	if last, ok := jsonbSafeEscape(doc, i); ok {
		return last, false, true
	}
	return i, true, false
}

// jsonbSafeEscape checks the escape that starts at doc[i] (a backslash)
// and returns the index of its last byte: jsonb refuses \u0000, a lone
// surrogate and a malformed \u escape.
func jsonbSafeEscape(doc []byte, i int) (int, bool) {
	if i+1 < len(doc) && doc[i+1] != 'u' {
		return i + 1, true
	}
	r, ok := unicodeEscape(doc, i)
	switch {
	case !ok || r == 0 || 0xDC00 <= r && r <= 0xDFFF:
		return i, false
	case 0xD800 <= r && r <= 0xDBFF:
		low, ok := unicodeEscape(doc, i+6)
		if !ok || low < 0xDC00 || low > 0xDFFF {
			return i, false
		}
		return i + 11, true
	}
	return i + 5, true
}

// quoteOrBackslash marks, in the high bit of each byte, the bytes of the
// eight of w (in memory order, little-endian) that are a quote or a
// backslash. Only its lowest mark is exact (a mark above it may be
// false), which is the one jsonbSafeString uses.
func quoteOrBackslash(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, b := w^(ones*'"'), w^(ones*'\\')
	return ((q-ones)&^q | (b-ones)&^b) & highs
}

// unicodeEscape reads the escape \uXXXX at doc[i].
func unicodeEscape(doc []byte, i int) (rune, bool) {
	if i+6 > len(doc) || doc[i] != '\\' || doc[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range doc[i+2 : i+6] {
		c |= 0x20 // lower case a hex letter
		if !isHex(c) {
			return 0, false
		}
		r = r<<4 | rune(unhex(c))
	}
	return r, true
}

// jsonbSafeNumber reports whether numeric holds the number token num.
func jsonbSafeNumber(num []byte) bool {
	if len(num) > jsonbMaxNumber {
		return false
	}
	e := bytes.IndexAny(num, "eE")
	if e < 0 {
		return true
	}
	exp := bytes.TrimLeft(num[e+1:], "+-")
	exp = bytes.TrimLeft(exp, "0")
	if len(exp) > 5 {
		return false
	}
	n := 0
	for _, c := range exp {
		n = n*10 + int(c-'0')
	}
	return n <= jsonbMaxExponent
}

// firstErr returns the first non-nil error of errs: the ids of one call
// are checked together, each with bindings.CheckID or CheckOptionalID.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkSweepPage checks a sweep's page: a limit of at least 1, and the
// ids of the reference it continues after (the tenant's, and the record's
// as field).
func checkSweepPage(limit int, afterTenantID, field, afterID string) error {
	if limit < 1 {
		return invalid("limit must be at least 1")
	}
	return firstErr(bindings.CheckOptionalID("after tenant id", afterTenantID), bindings.CheckOptionalID(field, afterID))
}
