package bindings

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"unicode/utf8"

	"github.com/kindgi/agents/internal/jsonscan"
)

// validJSON reports what utf8.Valid(b) && json.Valid(b) reports, in one
// pass over the bytes and without encoding/json's scanner, which costs a
// function call per byte: every store checks every payload it is asked to
// keep (a turn's journal outputs, messages, snapshots), and that check was
// a quarter of a memstore turn. Values nested deeper than its own small
// stack go to the two standard checks.
func validJSON(b []byte) bool {
	var stack [64]byte // '{' or '[' of each open container
	depth := 0
	n := len(b)
	i := skipSpace(b, 0)
	for {
		// A value starts at i.
		if i >= n {
			return false
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if depth == len(stack) {
				return utf8.Valid(b) && json.Valid(b)
			}
			i = skipSpace(b, i+1)
			if i < n && b[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				i++
				break
			}
			stack[depth] = c
			depth++
			if c == '{' {
				if i = member(b, i); i < 0 {
					return false
				}
			}
			continue
		case c == '"':
			if i = str(b, i); i < 0 {
				return false
			}
		case c == 't':
			if i = literal(b, i, "true"); i < 0 {
				return false
			}
		case c == 'f':
			if i = literal(b, i, "false"); i < 0 {
				return false
			}
		case c == 'n':
			if i = literal(b, i, "null"); i < 0 {
				return false
			}
		case c == '-' || (c >= '0' && c <= '9'):
			if i = number(b, i); i < 0 {
				return false
			}
		default:
			return false
		}
		// A value ended at i: close containers, or go on to the next value.
		for {
			i = skipSpace(b, i)
			if depth == 0 {
				return i == n
			}
			if i >= n {
				return false
			}
			top := stack[depth-1]
			if b[i] == top+2 {
				depth--
				i++
				continue
			}
			if b[i] != ',' {
				return false
			}
			i = skipSpace(b, i+1)
			if top == '{' {
				if i = member(b, i); i < 0 {
					return false
				}
			}
			break
		}
	}
}

// member reads an object member's key and colon at i (a string, space, a
// colon, space) and returns where its value starts, or -1.
func member(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = str(b, i); i < 0 {
		return -1
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipSpace(b, i+1)
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// literal reads word at i and returns the index after it, or -1.
func literal(b []byte, i int, word string) int {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}

// str reads the string whose quote is at i and returns the index after its
// closing quote, or -1: no control character, only JSON's escapes, and
// UTF-8 that is valid.
func str(b []byte, i int) int {
	n := len(b)
	i++
	for i < n {
		// The run of bytes that need no thought: eight at a time, then
		// the last few one at a time.
		for i+8 <= n {
			if m := strSpecial(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		for i < n && strPlain[b[i]] {
			i++
		}
		if i >= n {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1
		case c == '\\':
			k := jsonscan.EscapeLen(b, i)
			if k == 0 {
				return -1
			}
			i += k
		case c < 0x20:
			return -1
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return -1
			}
			i += size
		}
	}
	return -1
}

// strSpecial marks, in the high bit of each byte, the bytes of the eight
// of w (in memory order, little-endian) that strPlain does not hold: a
// quote, a backslash, a control character or a byte of a multi-byte
// character. Only its lowest mark is exact (a mark above it may be
// false), which is the one str uses.
func strSpecial(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, s := w^(ones*'"'), w^(ones*'\\')
	return (w | (w-ones*0x20)&^w | (q-ones)&^q | (s-ones)&^s) & highs
}

// strPlain holds the bytes a JSON string holds as they are: printable
// ASCII but the quote and the backslash.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// number reads the number at i and returns the index after it, or -1:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func number(b []byte, i int) int {
	n := len(b)
	if b[i] == '-' {
		i++
	}
	switch {
	case i < n && b[i] == '0':
		i++
	case i < n && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return -1
	}
	if i < n && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < n && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < n && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

// digits returns the index of the first non-digit at or after i.
func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
