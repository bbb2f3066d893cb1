// Package jsonscan reads strict JSON (RFC 8259, as encoding/json accepts
// it) straight from the bytes, for the fast paths of pack (a schema check
// with nothing decoded) and pack/packserver (a request envelope read
// without reflection). It holds the lexical pieces both walk with:
// whitespace, literals, strings, numbers and the punctuation of objects
// and arrays; what a value means is the caller's. EscapeLen, the check of
// one string escape, also serves the bindings' JSON validator and
// journalcodec's compaction, which walk strings their own way.
//
// A Scanner is a position in a byte slice. Every method that fails
// returns false and leaves the position where the failure was found: a
// caller that gets false gives up on the input.
package jsonscan

// Scanner walks B from I.
type Scanner struct {
	B []byte
	I int
}

// WS skips whitespace.
func (s *Scanner) WS() {
	for s.I < len(s.B) {
		switch s.B[s.I] {
		case ' ', '\t', '\n', '\r':
			s.I++
		default:
			return
		}
	}
}

// Peek returns the byte at I, or 0 at the end.
func (s *Scanner) Peek() byte {
	if s.I < len(s.B) {
		return s.B[s.I]
	}
	return 0
}

// Literal consumes lit (true, false or null).
func (s *Scanner) Literal(lit string) bool {
	if len(s.B)-s.I < len(lit) || string(s.B[s.I:s.I+len(lit)]) != lit {
		return false
	}
	s.I += len(lit)
	return true
}

// PlainByte says which bytes stand for themselves inside a JSON string:
// all but the quote, the backslash and the control characters.
var PlainByte = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\'
	}
	return t
}()

// PlainString consumes a string without escapes at I and returns the bytes
// between its quotes (not checked for UTF-8). A string with an escape or a
// control character, or no string, is false.
func (s *Scanner) PlainString() ([]byte, bool) {
	if s.I >= len(s.B) || s.B[s.I] != '"' {
		return nil, false
	}
	start := s.I + 1
	j := start
	for j < len(s.B) && PlainByte[s.B[j]] {
		j++
	}
	if j >= len(s.B) || s.B[j] != '"' {
		return nil, false // an escape, a control character, or the end
	}
	s.I = j + 1
	return s.B[start:j], true
}

// SkipString consumes a string at I, escapes included. Invalid UTF-8 is
// allowed, as encoding/json allows it (it decodes to U+FFFD).
func (s *Scanner) SkipString() bool {
	if s.I >= len(s.B) || s.B[s.I] != '"' {
		return false
	}
	j := s.I + 1
	for {
		for j < len(s.B) && PlainByte[s.B[j]] {
			j++
		}
		if j >= len(s.B) {
			return false
		}
		switch s.B[j] {
		case '"':
			s.I = j + 1
			return true
		case '\\':
			k := EscapeLen(s.B, j)
			if k == 0 {
				return false
			}
			j += k
		default:
			return false // a control character
		}
	}
}

// EscapeLen returns the length of the escape whose backslash is at b[i]:
// 2 for \" \\ \/ \b \f \n \r \t, 6 for \u and four hex digits, and 0 for
// anything else JSON does not allow (or an escape cut off by the end).
// It is small enough to inline into the string loops that call it.
func EscapeLen(b []byte, i int) int {
	if i+1 < len(b) {
		if c := b[i+1]; c != 'u' {
			return int(shortEscape[c])
		}
		if i+6 <= len(b) && hexDigit[b[i+2]]&hexDigit[b[i+3]]&hexDigit[b[i+4]]&hexDigit[b[i+5]] != 0 {
			return 6
		}
	}
	return 0
}

// shortEscape is 2 for the bytes that follow a backslash in a two-byte
// escape, 0 for the others; hexDigit is 1 for a hex digit, 0 otherwise.
var shortEscape, hexDigit = func() (e, h [256]uint8) {
	for _, c := range `"\/bfnrt` {
		e[c] = 2
	}
	for c := range h {
		if isHex(byte(c)) {
			h[c] = 1
		}
	}
	return e, h
}()

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// Number consumes a number at I. plain reports an integer (no fraction,
// no exponent) of at most 15 digits: one that strconv.ParseInt reads
// exactly and float64 holds exactly.
func (s *Scanner) Number() (plain, ok bool) {
	j := s.I
	if j < len(s.B) && s.B[j] == '-' {
		j++
	}
	digits := j
	switch {
	case j < len(s.B) && s.B[j] == '0':
		j++
	case j < len(s.B) && s.B[j] >= '1' && s.B[j] <= '9':
		for j < len(s.B) && s.B[j] >= '0' && s.B[j] <= '9' {
			j++
		}
	default:
		return false, false
	}
	plain = j-digits <= 15
	if j < len(s.B) && s.B[j] == '.' {
		plain = false
		j++
		if !s.digits(&j) {
			return false, false
		}
	}
	if j < len(s.B) && (s.B[j] == 'e' || s.B[j] == 'E') {
		plain = false
		j++
		if j < len(s.B) && (s.B[j] == '+' || s.B[j] == '-') {
			j++
		}
		if !s.digits(&j) {
			return false, false
		}
	}
	s.I = j
	return plain, true
}

// digits advances *j over one or more digits.
func (s *Scanner) digits(j *int) bool {
	k := *j
	for *j < len(s.B) && s.B[*j] >= '0' && s.B[*j] <= '9' {
		*j++
	}
	return *j > k
}

// Open consumes the '{' or '[' at I (the caller has seen it) and the
// whitespace after it, and, when close ('}' or ']') comes next, that too:
// empty reports an empty object or array.
func (s *Scanner) Open(close byte) (empty bool) {
	s.I++
	s.WS()
	if s.I < len(s.B) && s.B[s.I] == close {
		s.I++
		return true
	}
	return false
}

// Key consumes an object member's key (a string without escapes) and the
// colon after it, with the whitespace around them, and returns the key's
// bytes.
func (s *Scanner) Key() ([]byte, bool) {
	s.WS()
	key, ok := s.PlainString()
	if !ok {
		return nil, false
	}
	s.WS()
	if s.I >= len(s.B) || s.B[s.I] != ':' {
		return nil, false
	}
	s.I++
	s.WS()
	return key, true
}

// Next consumes what follows a member or an element: a comma (more is
// true) or close (more is false), whitespace before it skipped. Anything
// else is not ok.
func (s *Scanner) Next(close byte) (more, ok bool) {
	s.WS()
	if s.I >= len(s.B) {
		return false, false
	}
	c := s.B[s.I]
	s.I++
	switch c {
	case ',':
		return true, true
	case close:
		return false, true
	}
	return false, false
}
