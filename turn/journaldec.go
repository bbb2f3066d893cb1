package turn

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
)

// The journal's decoders: reflection-free readers of the JSON a run's
// journal and snapshot hold, for the types a replay decodes. They read
// exactly the forms the encoders write (journalenc.go, and json.Marshal of
// the other step outputs) and give the value json.Unmarshal gives, or they
// decline and the caller uses json.Unmarshal: an unknown or repeated key, a
// key or string with an escape they do not handle (a surrogate pair),
// invalid UTF-8, a null, a number out of range, anything that is not
// valid JSON. TestFastDecodeMatchesUnmarshal and FuzzFastDecode hold them
// to json.Unmarshal.

// decodeFast decodes raw into *out when it is one of the types with a
// decoder and raw is in a form the decoder reads; it reports false (and
// *out is to be discarded) otherwise.
func decodeFast[T any](raw []byte, out *T) bool { return decodeFastIn(raw, string(raw), out) }

// decodeFastIn is decodeFast with s the text of raw: string(raw), or
// raw's bytes themselves when no one ever writes them (an entry of the
// journal read for the drive: see run.inPlace), so that the strings
// decoded share them instead of a copy.
func decodeFastIn[T any](raw []byte, s string, out *T) bool {
	d := jdec{b: raw, s: s}
	switch v := any(out).(type) {
	case *setupState:
		d.setup(v)
	case *[]bindings.ChatMessage:
		*v = d.chatMessages()
	case *bindings.ConversationMessage:
		d.conversationMessage(v)
	case *bindings.GenerateResponse:
		d.response(v)
	case *[]callPlan:
		*v = d.callPlans()
	case *toolResult:
		d.toolResult(v)
	case *budgetState:
		d.budget(v)
	case *approvalOutcome:
		d.approvalOutcome(v)
	case *parkRecord:
		d.parkRecord(v)
	case *composeRecord:
		d.composeRecord(v)
	case *string:
		*v = d.str()
	case *[]RetrievedFact:
		if d.arrStart() { // only the empty list: facts go to encoding/json
			d.fail()
		}
		*v = []RetrievedFact{}
	case *Input:
		d.input(v)
	default:
		return false
	}
	return d.end()
}

// maxDecodeDepth is the deepest nesting the decoders read; deeper
// documents go to encoding/json (whose own limit is far higher).
const maxDecodeDepth = 64

// jdec reads one JSON document. A failure sets bad and moves to the end:
// every later read fails too and the caller falls back to encoding/json.
type jdec struct {
	b []byte // the document
	s string // b as one string: decoded strings without escapes are its substrings
	// The first raw value of a document is a copy of its own (most
	// documents hold one: a tool call's arguments, a tool's schema); own
	// is a copy of b from the second one on (b[ownAt:]), and that value
	// and every later one are its slices (capped, so an append to one
	// never reaches the next): at most two allocations a document, and no
	// raw value shares memory with b.
	own     []byte
	ownAt   int
	rawSeen bool
	i       int
	bad     bool
}

func (d *jdec) fail() {
	d.bad = true
	d.i = len(d.s)
}

// end reports whether the document was read without a failure, to its
// end (trailing whitespace allowed).
func (d *jdec) end() bool {
	d.ws()
	return !d.bad && d.i == len(d.s)
}

func (d *jdec) ws() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next byte after whitespace (0 at the end).
func (d *jdec) peek() byte {
	if d.i < len(d.s) && d.s[d.i] > ' ' { // no whitespace: the usual case
		return d.s[d.i]
	}
	d.ws()
	if d.i < len(d.s) {
		return d.s[d.i]
	}
	return 0
}

// eat consumes c when it is the next byte after whitespace.
func (d *jdec) eat(c byte) bool {
	if d.peek() == c {
		d.i++
		return true
	}
	return false
}

func (d *jdec) want(c byte) {
	if !d.eat(c) {
		d.fail()
	}
}

// objStart reads '{' and reports whether a member follows.
func (d *jdec) objStart() bool {
	if !d.eat('{') {
		d.fail()
		return false
	}
	return !d.eat('}')
}

// objNext reads what follows a member's value and reports whether
// another member follows.
func (d *jdec) objNext() bool {
	if d.bad {
		return false
	}
	if d.eat(',') {
		return true
	}
	d.want('}')
	return false
}

// arrStart reads '[' and reports whether an element follows.
func (d *jdec) arrStart() bool {
	if !d.eat('[') {
		d.fail()
		return false
	}
	return !d.eat(']')
}

// arrNext reads what follows an element and reports whether another
// element follows.
func (d *jdec) arrNext() bool {
	if d.bad {
		return false
	}
	if d.eat(',') {
		return true
	}
	d.want(']')
	return false
}

// key reads a struct member's name and its colon. The name is the bytes
// up to the next quote, undecoded: a name with an escape or any other
// byte is not one of the names a decoder's switch knows, so it fails
// there.
func (d *jdec) key() string {
	if d.peek() != '"' {
		d.fail()
		return ""
	}
	s, start := d.s, d.i+1
	n := strings.IndexByte(s[start:], '"')
	if n < 0 {
		d.fail()
		return ""
	}
	j := start + n
	d.i = j + 1
	if d.i < len(s) && s[d.i] == ':' {
		d.i++
	} else {
		d.want(':')
	}
	return s[start:j]
}

// mapKey reads a map key: a string without escapes (the decoded key is
// the bytes) and its colon.
func (d *jdec) mapKey() string {
	k := d.key()
	for i := 0; i < len(k); i++ {
		if !strPlain[k[i]] {
			d.fail()
			return ""
		}
	}
	return k
}

// once fails on a member read twice (json.Unmarshal merges repeated
// members in ways not worth copying).
func (d *jdec) once(seen *uint32, bit uint) {
	if *seen&(1<<bit) != 0 {
		d.fail()
	}
	*seen |= 1 << bit
}

// str reads a string.
func (d *jdec) str() string {
	if d.peek() != '"' {
		d.fail()
		return ""
	}
	s, start := d.s, d.i+1
	j := start
	for b := d.b; j+8 <= len(b); j += 8 {
		if m := notPlain8(binary.LittleEndian.Uint64(b[j:])); m != 0 {
			j += bits.TrailingZeros64(m) >> 3
			break
		}
	}
	for j < len(s) && strPlain[s[j]] {
		j++
	}
	if j < len(s) && s[j] == '"' {
		d.i = j + 1
		return s[start:j]
	}
	return d.strSlow(start, j)
}

// notPlain8 has the high bit set of each byte of w (eight bytes of a
// document, the first lowest) that is not strPlain — a control, a
// non-ASCII byte, the quote, the backslash — and, above the first such
// byte, maybe of others: the lowest set bit is exact (the borrow of a
// subtraction only carries upward).
func notPlain8(w uint64) uint64 {
	const lo01, lo20, hi80 = 0x0101010101010101, 0x2020202020202020, 0x8080808080808080
	q, b := w^(0x22*lo01), w^(0x5c*lo01)
	return ((w-lo20) & ^w | (q-lo01)&^q | (b-lo01)&^b | w) & hi80
}

// strPlain holds the bytes a string holds as they are: printable ASCII but
// the quote and the backslash.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// rawPlain holds the bytes skipString passes over: any but a control
// byte, the quote and the backslash (encoding/json does not check UTF-8
// in a value it keeps raw).
var rawPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// strSlow reads the rest of a string from j, the first byte that is an
// escape, a control or a non-ASCII byte; s[start:j] is plain.
func (d *jdec) strSlow(start, j int) string {
	buf := make([]byte, 0, j-start+16)
	buf = append(buf, d.s[start:j]...)
	for j < len(d.s) {
		c := d.s[j]
		switch {
		case c == '"':
			d.i = j + 1
			return string(buf)
		case c == '\\':
			if j+1 >= len(d.s) {
				d.fail()
				return ""
			}
			switch e := d.s[j+1]; e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := hex4(d.s, j+2)
				if !ok || (r >= 0xD800 && r < 0xE000) { // surrogates: encoding/json's
					d.fail()
					return ""
				}
				buf = utf8.AppendRune(buf, r)
				j += 4
			default:
				d.fail()
				return ""
			}
			j += 2
		case c < 0x20:
			d.fail()
			return ""
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			j++
		default:
			r, n := utf8.DecodeRuneInString(d.s[j:])
			if r == utf8.RuneError && n == 1 { // invalid UTF-8: encoding/json replaces it
				d.fail()
				return ""
			}
			buf = append(buf, d.s[j:j+n]...)
			j += n
		}
	}
	d.fail()
	return ""
}

// hex4 reads four hex digits at s[i:].
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// number reads a number literal as JSON's grammar has it and reports
// whether it is an integer (no fraction, no exponent).
func (d *jdec) number() (string, bool) {
	d.ws()
	s, j := d.s, d.i
	start := j
	digits := func() bool {
		k := j
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		return j > k
	}
	if j < len(s) && s[j] == '-' {
		j++
	}
	switch {
	case j < len(s) && s[j] == '0':
		j++
	case !digits():
		d.fail()
		return "", false
	}
	isInt := true
	if j < len(s) && s[j] == '.' {
		j++
		isInt = false
		if !digits() {
			d.fail()
			return "", false
		}
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		j++
		isInt = false
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if !digits() {
			d.fail()
			return "", false
		}
	}
	d.i = j
	return s[start:j], isInt
}

func (d *jdec) int64v() int64 { return d.integer(64) }

func (d *jdec) intv() int { return int(d.integer(strconv.IntSize)) }

// integer reads an integer literal that fits in bits, as strconv.ParseInt
// (which encoding/json uses) reads it: by hand up to 18 digits (no
// overflow possible), by ParseInt beyond.
func (d *jdec) integer(bits int) int64 {
	lit, isInt := d.number()
	if d.bad || !isInt {
		d.fail()
		return 0
	}
	digits := lit
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) <= 18 && bits == 64 {
		var n int64
		for i := 0; i < len(digits); i++ {
			n = n*10 + int64(digits[i]-'0')
		}
		if len(digits) < len(lit) {
			n = -n
		}
		return n
	}
	n, err := strconv.ParseInt(lit, 10, bits)
	if err != nil {
		d.fail()
	}
	return n
}

func (d *jdec) float() float64 {
	lit, _ := d.number()
	if d.bad {
		return 0
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		d.fail()
	}
	return f
}

func (d *jdec) boolv() bool {
	d.ws()
	switch {
	case strings.HasPrefix(d.s[d.i:], "true"):
		d.i += 4
		return true
	case strings.HasPrefix(d.s[d.i:], "false"):
		d.i += 5
		return false
	}
	d.fail()
	return false
}

// raw reads any value and returns its bytes, as json.RawMessage's
// UnmarshalJSON keeps them (a null too), in memory of the decoder's own.
func (d *jdec) raw() json.RawMessage {
	d.ws()
	start := d.i
	d.skip()
	if d.bad {
		return nil
	}
	if !d.rawSeen {
		d.rawSeen = true
		v := make(json.RawMessage, d.i-start)
		copy(v, d.b[start:d.i])
		return v
	}
	if d.own == nil {
		d.own, d.ownAt = append([]byte(nil), d.b[start:]...), start
	}
	return json.RawMessage(d.own[start-d.ownAt : d.i-d.ownAt : d.i-d.ownAt])
}

// skip reads any value, checking its syntax, in one loop: open
// containers are a stack of bits (1 an object, 0 an array), at most
// maxDecodeDepth deep.
func (d *jdec) skip() {
	s, i := d.s, d.i
	var stack uint64
	depth := 0
	const (
		value = iota // a value is next
		after        // a value ended
		key          // a member name is next
	)
	state := value
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
		if i >= len(s) {
			d.fail()
			return
		}
		c := s[i]
		switch state {
		case value:
			switch c {
			case '{', '[':
				if depth == maxDecodeDepth {
					d.fail()
					return
				}
				stack <<= 1
				state = value
				if c == '{' {
					stack |= 1
					state = key
				}
				depth++
				i++
				// An empty container ends at once.
				for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
					i++
				}
				if i < len(s) && ((c == '{' && s[i] == '}') || (c == '[' && s[i] == ']')) {
					i++
					stack >>= 1
					depth--
					state = after
				}
				continue
			case '"':
				i = scanString(s, i)
			case 't':
				i = scanLiteral(s, i, "true")
			case 'f':
				i = scanLiteral(s, i, "false")
			case 'n':
				i = scanLiteral(s, i, "null")
			default:
				d.i = i
				d.number()
				if d.bad {
					return
				}
				i = d.i
			}
			if i < 0 {
				d.fail()
				return
			}
			state = after
		case after:
			if depth == 0 {
				d.i = i
				return
			}
			obj := stack&1 == 1
			switch {
			case c == ',':
				i++
				state = value
				if obj {
					state = key
				}
			case (c == '}' && obj) || (c == ']' && !obj):
				i++
				stack >>= 1
				depth--
			default:
				d.fail()
				return
			}
		case key:
			if c != '"' {
				d.fail()
				return
			}
			if i = scanString(s, i); i < 0 {
				d.fail()
				return
			}
			for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
				i++
			}
			if i >= len(s) || s[i] != ':' {
				d.fail()
				return
			}
			i++
			state = value
		}
	}
}

// scanLiteral returns the index after lit at s[i:], or -1.
func scanLiteral(s string, i int, lit string) int {
	if !strings.HasPrefix(s[i:], lit) {
		return -1
	}
	return i + len(lit)
}

// scanString returns the index after the string whose quote is at s[i],
// or -1 when it is not a valid string: any byte but a control byte, and
// valid escapes.
func scanString(s string, i int) int {
	for j := i + 1; j < len(s); {
		for j < len(s) && rawPlain[s[j]] {
			j++
		}
		if j == len(s) {
			break
		}
		switch c := s[j]; {
		case c == '"':
			return j + 1
		case c == '\\':
			if j+1 >= len(s) {
				return -1
			}
			switch s[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if _, ok := hex4(s, j+2); !ok {
					return -1
				}
				j += 6
			default:
				return -1
			}
		default: // a control byte
			return -1
		}
	}
	return -1
}

// null reads a null, if one is next: a list the encoder wrote from a nil
// slice (a field without omitempty), which json.Unmarshal leaves nil.
func (d *jdec) null() bool {
	if d.peek() == 'n' {
		d.literal("null")
		return true
	}
	return false
}

func (d *jdec) literal(lit string) {
	if !strings.HasPrefix(d.s[d.i:], lit) {
		d.fail()
		return
	}
	d.i += len(lit)
}

// skipString reads a string (at its quote) without decoding it.
func (d *jdec) skipString() {
	if d.i = scanString(d.s, d.i); d.i < 0 {
		d.fail()
	}
}

// timev reads a time as time.Time's UnmarshalJSON does (json.Unmarshal
// hands it the quoted bytes).
func (d *jdec) timev() time.Time {
	if d.peek() != '"' {
		d.fail()
		return time.Time{}
	}
	start := d.i
	if n := strings.IndexByte(d.s[start+1:], '"'); n >= 0 {
		// The encoder's form has no escape: the first quote ends it.
		if t, ok := utcTime(d.s[start+1 : start+1+n]); ok {
			d.i = start + n + 2
			return t
		}
	}
	d.skipString()
	if d.bad {
		return time.Time{}
	}
	var t time.Time
	if t.UnmarshalJSON(d.b[start:d.i]) != nil {
		d.fail()
	}
	return t
}

// digits is the number s[a:b] writes in decimal digits, or -1 when a byte
// is not a digit.
func digits(s string, a, b int) int {
	n := 0
	for _, c := range []byte(s[a:b]) {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// utcTime reads the form the encoder writes a UTC time in,
// "2006-01-02T15:04:05[.fraction]Z", as time.Time's UnmarshalJSON reads
// it (time.Date in UTC); it reports false for anything else, and for a
// day past the 28th (left to UnmarshalJSON, which knows the months).
func utcTime(s string) (time.Time, bool) {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[len(s)-1] != 'Z' {
		return time.Time{}, false
	}
	year, month, day := digits(s, 0, 4), digits(s, 5, 7), digits(s, 8, 10)
	hour, minute, sec := digits(s, 11, 13), digits(s, 14, 16), digits(s, 17, 19)
	if year < 0 || month < 1 || month > 12 || day < 1 || day > 28 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	switch frac := s[19 : len(s)-1]; {
	case frac == "":
	case len(frac) >= 2 && len(frac) <= 10 && frac[0] == '.':
		if nsec = digits(s, 20, len(s)-1); nsec < 0 {
			return time.Time{}, false
		}
		for i := len(frac) - 1; i < 9; i++ {
			nsec *= 10
		}
	default:
		return time.Time{}, false
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

// anyv reads a value as json.Unmarshal into an interface does: objects as
// map[string]any, arrays as []any, numbers as float64.
func (d *jdec) anyv(depth int) any {
	if depth > maxDecodeDepth {
		d.fail()
		return nil
	}
	switch d.peek() {
	case '{':
		m := map[string]any{}
		for more := d.objStart(); more; more = d.objNext() {
			k := d.mapKey()
			m[k] = d.anyv(depth + 1)
		}
		return m
	case '[':
		a := []any{}
		for more := d.arrStart(); more; more = d.arrNext() {
			a = append(a, d.anyv(depth+1))
		}
		return a
	case '"':
		return d.str()
	case 't', 'f':
		return d.boolv()
	case 'n':
		d.literal("null")
		return nil
	}
	return d.float()
}

func (d *jdec) strings() []string {
	if d.null() {
		return nil
	}
	out := []string{}
	for more := d.arrStart(); more; more = d.arrNext() {
		out = append(out, d.str())
	}
	return out
}

func (d *jdec) stringMap() map[string]string {
	m := map[string]string{}
	for more := d.objStart(); more; more = d.objNext() {
		k := d.mapKey()
		m[k] = d.str()
	}
	return m
}

// gate reads an agent.ToolGate: a bare mode string, or an object given to
// its UnmarshalJSON as json.Unmarshal would.
func (d *jdec) gate() agent.ToolGate {
	switch d.peek() {
	case '"':
		return agent.ToolGate{Mode: agent.GateMode(d.str())}
	case '{':
		start := d.i
		d.skip()
		var g agent.ToolGate
		if d.bad || g.UnmarshalJSON(d.b[start:d.i]) != nil {
			d.fail()
		}
		return g
	}
	d.fail()
	return agent.ToolGate{}
}

func (d *jdec) gateMap() map[string]agent.ToolGate {
	m := map[string]agent.ToolGate{}
	for more := d.objStart(); more; more = d.objNext() {
		k := d.mapKey()
		m[k] = d.gate()
	}
	return m
}

func (d *jdec) toolCalls() []bindings.ToolCall {
	if d.null() {
		return nil
	}
	out := []bindings.ToolCall{}
	for more := d.arrStart(); more; more = d.arrNext() {
		var c bindings.ToolCall
		var seen uint32
		next := 0
		for more := d.objStart(); more; more = d.objNext() {
			switch d.keyIn(&namesToolCalls, &next) {
			case "id":
				d.once(&seen, 0)
				c.ID = d.str()
			case "name":
				d.once(&seen, 1)
				c.Name = d.str()
			case "arguments":
				d.once(&seen, 2)
				c.Arguments = d.raw()
			default:
				d.fail()
			}
		}
		out = append(out, c)
	}
	return out
}

func (d *jdec) chatMessages() []bindings.ChatMessage {
	if d.null() {
		return nil
	}
	// Room for every message (each opens with its role, the field the
	// encoder writes first) and for the few a drive appends.
	out := make([]bindings.ChatMessage, 0, strings.Count(d.s, `{"role":`)+4)
	for more := d.arrStart(); more; more = d.arrNext() {
		var m bindings.ChatMessage
		var seen uint32
		next := 0
		for more := d.objStart(); more; more = d.objNext() {
			switch d.keyIn(&namesChatMessages, &next) {
			case "role":
				d.once(&seen, 0)
				m.Role = bindings.ChatRole(d.str())
			case "content":
				d.once(&seen, 1)
				m.Content = d.str()
			case "toolCalls":
				d.once(&seen, 2)
				m.ToolCalls = d.toolCalls()
			case "toolCallId":
				d.once(&seen, 3)
				m.ToolCallID = d.str()
			default:
				d.fail()
			}
		}
		out = append(out, m)
	}
	return out
}

func (d *jdec) conversationMessage(m *bindings.ConversationMessage) {
	var seen uint32
	next := 0
	for more := d.objStart(); more; more = d.objNext() {
		switch d.keyIn(&namesConversationMessage, &next) {
		case "tenantId":
			d.once(&seen, 0)
			m.TenantID = d.str()
		case "conversationId":
			d.once(&seen, 1)
			m.ConversationID = d.str()
		case "id":
			d.once(&seen, 2)
			m.ID = d.str()
		case "seq":
			d.once(&seen, 3)
			m.Seq = d.int64v()
		case "role":
			d.once(&seen, 4)
			m.Role = bindings.MessageRole(d.str())
		case "content":
			d.once(&seen, 5)
			m.Content = d.str()
		case "toolCalls":
			d.once(&seen, 6)
			m.ToolCalls = d.toolCalls()
		case "toolCallId":
			d.once(&seen, 7)
			m.ToolCallID = d.str()
		case "turnNumber":
			d.once(&seen, 8)
			m.TurnNumber = d.intv()
		case "runId":
			d.once(&seen, 9)
			m.RunID = d.str()
		case "participantId":
			d.once(&seen, 10)
			m.ParticipantID = d.str()
		case "metadata":
			d.once(&seen, 11)
			m.Metadata = d.raw()
		case "createdAt":
			d.once(&seen, 12)
			m.CreatedAt = d.timev()
		default:
			d.fail()
		}
	}
}

func (d *jdec) usage(u *bindings.Usage) {
	var seen uint32
	next := 0
	for more := d.objStart(); more; more = d.objNext() {
		switch d.keyIn(&namesUsage, &next) {
		case "inputTokens":
			d.once(&seen, 0)
			u.InputTokens = d.intv()
		case "outputTokens":
			d.once(&seen, 1)
			u.OutputTokens = d.intv()
		case "costUsd":
			d.once(&seen, 2)
			u.CostUsd = d.float()
		default:
			d.fail()
		}
	}
}

func (d *jdec) response(v *bindings.GenerateResponse) {
	var seen uint32
	next := 0
	for more := d.objStart(); more; more = d.objNext() {
		switch d.keyIn(&namesResponse, &next) {
		case "text":
			d.once(&seen, 0)
			v.Text = d.str()
		case "toolCalls":
			d.once(&seen, 1)
			v.ToolCalls = d.toolCalls()
		case "finishReason":
			d.once(&seen, 2)
			v.FinishReason = d.str()
		case "model":
			d.once(&seen, 3)
			v.Model = d.str()
		case "usage":
			d.once(&seen, 4)
			d.usage(&v.Usage)
		default:
			d.fail()
		}
	}
}

func (d *jdec) callPlans() []callPlan {
	if d.null() {
		return nil
	}
	out := make([]callPlan, 0, 1)
	for more := d.arrStart(); more; more = d.arrNext() {
		var p callPlan
		var seen uint32
		next := 0
		for more := d.objStart(); more; more = d.objNext() {
			switch d.keyIn(&namesCallPlans, &next) {
			case "id":
				d.once(&seen, 0)
				p.ID = d.str()
			case "key":
				d.once(&seen, 1)
				p.Key = d.str()
			case "toolId":
				d.once(&seen, 2)
				p.ToolID = d.str()
			case "toolVersion":
				d.once(&seen, 3)
				p.ToolVersion = d.str()
			case "arguments":
				d.once(&seen, 4)
				p.Arguments = d.raw()
			case "action":
				d.once(&seen, 5)
				p.Action = d.str()
			case "status":
				d.once(&seen, 6)
				p.Status = d.str()
			case "message":
				d.once(&seen, 7)
				p.Message = d.str()
			case "reviewerRole":
				d.once(&seen, 8)
				p.ReviewerRole = d.str()
			case "reason":
				d.once(&seen, 9)
				p.Reason = d.str()
			default:
				d.fail()
			}
		}
		out = append(out, p)
	}
	return out
}

func (d *jdec) toolResult(v *toolResult) {
	var seen uint32
	next := 0
	for more := d.objStart(); more; more = d.objNext() {
		switch d.keyIn(&namesToolResult, &next) {
		case "status":
			d.once(&seen, 0)
			v.Status = d.str()
		case "output":
			d.once(&seen, 1)
			v.Output = d.raw()
		case "error":
			d.once(&seen, 2)
			v.Error = d.str()
		default:
			d.fail()
		}
	}
}

func (d *jdec) budget(v *budgetState) {
	var seen uint32
	next := 0
	for more := d.objStart(); more; more = d.objNext() {
		switch d.keyIn(&namesBudget, &next) {
		case "modelCalls":
			d.once(&seen, 0)
			v.ModelCalls = d.intv()
		case "costUsd":
			d.once(&seen, 1)
			v.CostUsd = d.float()
		case "elapsedMs":
			d.once(&seen, 2)
			v.ElapsedMs = d.int64v()
		default:
			d.fail()
		}
	}
}

func (d *jdec) approvalOutcome(v *approvalOutcome) {
	var seen uint32
	next := 0
	for more := d.objStart(); more; more = d.objNext() {
		switch d.keyIn(&namesApprovalOutcome, &next) {
		case "status":
			d.once(&seen, 0)
			v.Status = d.str()
		case "approvalId":
			d.once(&seen, 1)
			v.ApprovalID = d.str()
		case "reviewer":
			d.once(&seen, 2)
			v.Reviewer = d.str()
		case "comment":
			d.once(&seen, 3)
			v.Comment = d.str()
		case "nextRole":
			d.once(&seen, 4)
			v.NextRole = d.str()
		default:
			d.fail()
		}
	}
}

func (d *jdec) approvalRequest(v *bindings.ApprovalRequest) {
	var seen uint32
	next := 0
	for more := d.objStart(); more; more = d.objNext() {
		switch d.keyIn(&namesApprovalRequest, &next) {
		case "tenantId":
			d.once(&seen, 0)
			v.TenantID = d.str()
		case "id":
			d.once(&seen, 1)
			v.ID = d.str()
		case "runId":
			d.once(&seen, 2)
			v.RunID = d.str()
		case "conversationId":
			d.once(&seen, 3)
			v.ConversationID = d.str()
		case "toolCallId":
			d.once(&seen, 4)
			v.ToolCallID = d.str()
		case "toolId":
			d.once(&seen, 5)
			v.ToolID = d.str()
		case "toolVersion":
			d.once(&seen, 6)
			v.ToolVersion = d.str()
		case "arguments":
			d.once(&seen, 7)
			v.Arguments = d.raw()
		case "reviewerRole":
			d.once(&seen, 8)
			v.ReviewerRole = d.str()
		case "reason":
			d.once(&seen, 9)
			v.Reason = d.str()
		case "createdAt":
			d.once(&seen, 10)
			v.CreatedAt = d.timev()
		case "expiresAt":
			d.once(&seen, 11)
			v.ExpiresAt = d.timev()
		default:
			d.fail()
		}
	}
}

func (d *jdec) parkRecord(v *parkRecord) {
	var seen uint32
	next := 0
	for more := d.objStart(); more; more = d.objNext() {
		switch d.keyIn(&namesParkRecord, &next) {
		case "request":
			d.once(&seen, 0)
			d.approvalRequest(&v.Request)
		case "elapsedMs":
			d.once(&seen, 1)
			v.ElapsedMs = d.int64v()
		default:
			d.fail()
		}
	}
}

// parkedElapsedMs reads the running time a parked approval entry recorded
// (parkRecord.ElapsedMs) without decoding the request it parked on.
func parkedElapsedMs(raw []byte) (int64, bool) {
	d := jdec{b: raw, s: string(raw)}
	var ms int64
	var seen uint32
	for more := d.objStart(); more; more = d.objNext() {
		switch d.key() {
		case "request":
			d.once(&seen, 0)
			d.skip()
		case "elapsedMs":
			d.once(&seen, 1)
			ms = d.int64v()
		default:
			d.fail()
		}
	}
	if d.end() {
		return ms, true
	}
	var pr struct {
		ElapsedMs int64 `json:"elapsedMs"`
	}
	if json.Unmarshal(raw, &pr) != nil {
		return 0, false
	}
	return pr.ElapsedMs, true
}

func (d *jdec) composeRecord(v *composeRecord) {
	var seen uint32
	next := 0
	for more := d.objStart(); more; more = d.objNext() {
		switch d.keyIn(&namesComposeRecord, &next) {
		case "status":
			d.once(&seen, 0)
			v.Status = Status(d.str())
		case "messageId":
			d.once(&seen, 1)
			v.MessageID = d.str()
		default:
			d.fail()
		}
	}
}

func (d *jdec) input(v *Input) {
	var seen uint32
	next := 0
	for more := d.objStart(); more; more = d.objNext() {
		switch d.keyIn(&namesInput, &next) {
		case "tenantId":
			d.once(&seen, 0)
			v.TenantID = d.str()
		case "projectId":
			d.once(&seen, 1)
			v.ProjectID = d.str()
		case "conversationId":
			d.once(&seen, 2)
			v.ConversationID = d.str()
		case "userMessage":
			d.once(&seen, 3)
			v.UserMessage = d.str()
		case "parameters":
			d.once(&seen, 4)
			if d.peek() != '{' {
				d.fail()
			}
			v.Parameters, _ = d.anyv(0).(map[string]any)
		case "participantId":
			d.once(&seen, 5)
			v.ParticipantID = d.str()
		case "dryRun":
			d.once(&seen, 6)
			v.DryRun = d.boolv()
		case "principal":
			d.once(&seen, 7)
			p := &bindings.Principal{}
			var ps uint32
			next := 0
			for more := d.objStart(); more; more = d.objNext() {
				switch d.keyIn(&namesInput1, &next) {
				case "id":
					d.once(&ps, 0)
					p.ID = d.str()
				case "roles":
					d.once(&ps, 1)
					p.Roles = d.strings()
				default:
					d.fail()
				}
			}
			v.Principal = p
		case "runId":
			d.once(&seen, 8)
			v.RunID = d.str()
		default: // modelSettings among them: encoding/json reads those
			d.fail()
		}
	}
}

func (d *jdec) setup(s *setupState) {
	var seen uint32
	next := 0
	for more := d.objStart(); more; more = d.objNext() {
		switch d.keyIn(&namesSetup, &next) {
		case "now":
			d.once(&seen, 0)
			s.Now = d.timev()
		case "turnNumber":
			d.once(&seen, 1)
			s.TurnNumber = d.intv()
		case "tools":
			d.once(&seen, 2)
			s.Tools = d.tools()
		case "guardrails":
			d.once(&seen, 3)
			s.Guardrails = d.guardrails()
		case "policy":
			d.once(&seen, 4)
			d.policy(&s.Policy)
		case "route":
			d.once(&seen, 5)
			d.route(&s.Route)
		case "model":
			d.once(&seen, 6)
			d.model(&s.Model)
		case "hitl":
			d.once(&seen, 7)
			d.hitl(&s.Hitl)
		case "sessionGate":
			d.once(&seen, 8)
			d.sessionGate(&s.SessionGate)
		case "budget":
			d.once(&seen, 9)
			d.budgetCaps(&s.Budget)
		case "historyLimit":
			d.once(&seen, 10)
			s.HistoryLimit = d.intv()
		default:
			d.fail()
		}
	}
}

func (d *jdec) tools() []bindings.ToolDescriptor {
	if d.null() {
		return nil
	}
	out := make([]bindings.ToolDescriptor, 0, 2)
	for more := d.arrStart(); more; more = d.arrNext() {
		var t bindings.ToolDescriptor
		var seen uint32
		next := 0
		for more := d.objStart(); more; more = d.objNext() {
			switch d.keyIn(&namesTools, &next) {
			case "id":
				d.once(&seen, 0)
				t.ID = d.str()
			case "version":
				d.once(&seen, 1)
				t.Version = d.str()
			case "description":
				d.once(&seen, 2)
				t.Description = d.str()
			case "inputSchema":
				d.once(&seen, 3)
				t.InputSchema = d.raw()
			case "outputSchema":
				d.once(&seen, 4)
				t.OutputSchema = d.raw()
			case "secrets":
				d.once(&seen, 5)
				t.Secrets = d.strings()
			case "env":
				d.once(&seen, 6)
				t.Env = d.stringMap()
			case "config":
				d.once(&seen, 7)
				if d.peek() != '{' {
					d.fail()
				}
				t.Config, _ = d.anyv(0).(map[string]any)
			case "annotations":
				d.once(&seen, 8)
				t.Annotations = d.annotations()
			case "gate":
				d.once(&seen, 9)
				g := d.gate()
				t.Gate = &g
			default:
				d.fail()
			}
		}
		out = append(out, t)
	}
	return out
}

func (d *jdec) annotations() *bindings.ToolAnnotations {
	a := &bindings.ToolAnnotations{}
	var seen uint32
	next := 0
	for more := d.objStart(); more; more = d.objNext() {
		switch d.keyIn(&namesAnnotations, &next) {
		case "title":
			d.once(&seen, 0)
			a.Title = d.str()
		case "readOnlyHint":
			d.once(&seen, 1)
			a.ReadOnlyHint = d.boolv()
		case "destructiveHint":
			d.once(&seen, 2)
			v := d.boolv()
			a.DestructiveHint = &v
		case "idempotentHint":
			d.once(&seen, 3)
			a.IdempotentHint = d.boolv()
		case "openWorldHint":
			d.once(&seen, 4)
			v := d.boolv()
			a.OpenWorldHint = &v
		default:
			d.fail()
		}
	}
	return a
}

func (d *jdec) guardrails() []bindings.Guardrail {
	if d.null() {
		return nil
	}
	out := []bindings.Guardrail{}
	for more := d.arrStart(); more; more = d.arrNext() {
		var g bindings.Guardrail
		var seen uint32
		next := 0
		for more := d.objStart(); more; more = d.objNext() {
			switch d.keyIn(&namesGuardrails, &next) {
			case "id":
				d.once(&seen, 0)
				g.ID = d.str()
			case "kind":
				d.once(&seen, 1)
				g.Kind = d.str()
			case "checkId":
				d.once(&seen, 2)
				g.CheckID = d.str()
			case "action":
				d.once(&seen, 3)
				g.Action = d.str()
			case "config":
				d.once(&seen, 4)
				g.Config = d.raw()
			default:
				d.fail()
			}
		}
		out = append(out, g)
	}
	return out
}

func (d *jdec) policy(p *Policy) {
	var seen uint32
	next := 0
	for more := d.objStart(); more; more = d.objNext() {
		switch d.keyIn(&namesPolicy, &next) {
		case "allowProviders":
			d.once(&seen, 0)
			if !d.null() { // null leaves the pointer nil
				l := d.strings()
				p.AllowProviders = &l
			}
		case "denyProviders":
			d.once(&seen, 1)
			p.DenyProviders = d.strings()
		case "allowModels":
			d.once(&seen, 2)
			if !d.null() { // null leaves the pointer nil
				l := d.strings()
				p.AllowModels = &l
			}
		case "denyModels":
			d.once(&seen, 3)
			p.DenyModels = d.strings()
		case "maxCostUsd":
			d.once(&seen, 4)
			c := d.float()
			p.MaxCostUsd = &c
		case "maxSteps":
			d.once(&seen, 5)
			n := d.intv()
			p.MaxSteps = &n
		case "maxWallMs":
			d.once(&seen, 6)
			n := d.int64v()
			p.MaxWallMs = &n
		case "hitl":
			d.once(&seen, 7)
			p.Hitl = d.hitlSpec()
		default:
			d.fail()
		}
	}
}

func (d *jdec) hitlSpec() *bindings.HitlSpec {
	h := &bindings.HitlSpec{}
	var seen uint32
	next := 0
	for more := d.objStart(); more; more = d.objNext() {
		switch d.keyIn(&namesHitlSpec, &next) {
		case "maxTimeoutMs":
			d.once(&seen, 0)
			n := d.int64v()
			h.MaxTimeoutMs = &n
		case "minReviewerRole":
			d.once(&seen, 1)
			h.MinReviewerRole = d.str()
		case "toolFloors":
			d.once(&seen, 2)
			h.ToolFloors = d.gateMap()
		case "onTimeout":
			d.once(&seen, 3)
			h.OnTimeout = d.str()
		case "afterTurns":
			d.once(&seen, 4)
			n := d.intv()
			h.AfterTurns = &n
		default:
			d.fail()
		}
	}
	return h
}

func (d *jdec) route(r *ProviderRef) {
	var seen uint32
	next := 0
	for more := d.objStart(); more; more = d.objNext() {
		switch d.keyIn(&namesRoute, &next) {
		case "provider":
			d.once(&seen, 0)
			r.Provider = d.str()
		case "model":
			d.once(&seen, 1)
			r.Model = d.str()
		default:
			d.fail()
		}
	}
}

func (d *jdec) model(m *bindings.ModelInfo) {
	var seen uint32
	next := 0
	for more := d.objStart(); more; more = d.objNext() {
		switch d.keyIn(&namesModel, &next) {
		case "id":
			d.once(&seen, 0)
			m.ID = d.str()
		case "features":
			d.once(&seen, 1)
			m.Features = d.strings()
		case "contextWindow":
			d.once(&seen, 2)
			m.ContextWindow = d.intv()
		case "inputPricePerMTok":
			d.once(&seen, 3)
			m.InputPricePerMTok = d.float()
		case "outputPricePerMTok":
			d.once(&seen, 4)
			m.OutputPricePerMTok = d.float()
		default:
			d.fail()
		}
	}
}

func (d *jdec) hitl(h *EffectiveHitlPolicy) {
	var seen uint32
	next := 0
	for more := d.objStart(); more; more = d.objNext() {
		switch d.keyIn(&namesHitl, &next) {
		case "timeoutMs":
			d.once(&seen, 0)
			h.TimeoutMs = d.int64v()
		case "reviewerRole":
			d.once(&seen, 1)
			h.ReviewerRole = d.str()
		case "onTimeout":
			d.once(&seen, 2)
			h.OnTimeout = d.str()
		case "afterTurns":
			d.once(&seen, 3)
			n := d.intv()
			h.AfterTurns = &n
		case "toolGates":
			d.once(&seen, 4)
			g := &agent.ToolGates{}
			var gs uint32
			next := 0
			for more := d.objStart(); more; more = d.objNext() {
				switch d.keyIn(&namesHitl1, &next) {
				case "default":
					d.once(&gs, 0)
					def := d.gate()
					g.Default = &def
				case "overrides":
					d.once(&gs, 1)
					g.Overrides = d.gateMap()
				default:
					d.fail()
				}
			}
			h.ToolGates = g
		case "toolFloors":
			d.once(&seen, 5)
			h.ToolFloors = d.gateMap()
		default:
			d.fail()
		}
	}
}

func (d *jdec) sessionGate(g *SessionGateResult) {
	var seen uint32
	next := 0
	for more := d.objStart(); more; more = d.objNext() {
		switch d.keyIn(&namesSessionGate, &next) {
		case "required":
			d.once(&seen, 0)
			g.Required = d.boolv()
		case "afterTurns":
			d.once(&seen, 1)
			g.AfterTurns = d.intv()
		case "turnNumber":
			d.once(&seen, 2)
			g.TurnNumber = d.intv()
		case "reason":
			d.once(&seen, 3)
			g.Reason = d.str()
		default:
			d.fail()
		}
	}
}

func (d *jdec) budgetCaps(b *budgetCaps) {
	var seen uint32
	next := 0
	for more := d.objStart(); more; more = d.objNext() {
		switch d.keyIn(&namesBudgetCaps, &next) {
		case "maxSteps":
			d.once(&seen, 0)
			b.MaxSteps = d.intv()
		case "maxCostUsd":
			d.once(&seen, 1)
			c := d.float()
			b.MaxCostUsd = &c
		case "maxWallMs":
			d.once(&seen, 2)
			b.MaxWallMs = d.int64v()
		case "maxToolCalls":
			d.once(&seen, 3)
			b.MaxToolCalls = d.intv()
		default:
			d.fail()
		}
	}
}

// unmarshal is json.Unmarshal(raw, out) for a zero *out, through the
// decoders above when they read raw.
func unmarshal[T any](raw []byte, out *T) error { return unmarshalIn(raw, out, false) }

// unmarshalIn is unmarshal; shared says no one ever writes raw's bytes
// (run.inPlace): the decoders read them in place, and the strings they
// return share them.
func unmarshalIn[T any](raw []byte, out *T, shared bool) error {
	var s string
	if shared {
		s = unsafe.String(unsafe.SliceData(raw), len(raw))
	} else {
		s = string(raw)
	}
	if decodeFastIn(raw, s, out) {
		return nil
	}
	// encoding/json decodes into a value of its own, so that out does not
	// escape: a caller's value stays on its stack when the decoders read
	// raw (the usual case).
	p := new(T)
	err := json.Unmarshal(raw, p)
	*out = *p
	return err
}

// loadPrompt decodes the prompt of a replayed render-prompt step
// (r.lazyPrompt), which the drive left undecoded until it is read:
// building the initial messages, or the provenance record.
func (r *run) loadPrompt() error {
	if e := r.lazyPrompt; e != nil {
		text, err := decodeOutcome[string](e, r.inPlace(e))
		if err != nil {
			return &agents.RunJournalUnavailableError{RunID: r.id, Err: err}
		}
		r.prompt, r.lazyPrompt = text, nil
	}
	return nil
}

// loadMessages decodes the initial messages of a replayed
// build-initial-messages step (r.lazyMessages), which the drive left
// undecoded until a step runs: only a step that runs reads the model's
// messages (a model call, a guardrail check, the provenance record), so a
// replay that runs nothing — a finished run folded, a Resume that finds its
// approval pending — never decodes them. Messages the drive appended
// meanwhile (r.messages) follow them.
func (r *run) loadMessages() error {
	e := r.lazyMessages
	if e == nil {
		return nil
	}
	msgs, err := decodeOutcome[[]bindings.ChatMessage](e, r.inPlace(e))
	if err != nil {
		return &agents.RunJournalUnavailableError{RunID: r.id, Err: err}
	}
	r.lazyMessages = nil
	r.messages = append(msgs, r.messages...)
	return nil
}

// parkedDecode is a parked approval entry's record, decoded by loadParked.
type parkedDecode struct {
	key string
	pr  parkRecord
}

// loadParked sets the running time of earlier drives from the parked
// approval entries of a journal (the latest a park recorded). Each
// entry's record is decoded once, here, and kept for the approval step
// that reads it (parkedRecord) — the first parked entry of a key, the one
// the journal index keeps. A record that does not decode as a whole still
// gives its running time as before (parkedElapsedMs).
func (r *run) loadParked(entries []bindings.JournalEntry) {
	for i := range entries {
		e := &entries[i]
		if e.Status != bindings.StepParked {
			continue
		}
		var pr parkRecord
		ms, ok := int64(0), false
		if unmarshalIn(e.Output, &pr, r.inPlace(e)) == nil {
			ms, ok = pr.ElapsedMs, true
			if !slices.ContainsFunc(r.parkedDecoded, func(p parkedDecode) bool { return p.key == e.Key }) {
				r.parkedDecoded = append(r.parkedDecoded, parkedDecode{key: e.Key, pr: pr})
			}
		} else {
			ms, ok = parkedElapsedMs(e.Output)
		}
		if ok && ms > r.elapsedBefore {
			r.elapsedBefore = ms
		}
	}
}

// parkedRecord is the record of parked entry e: the one loadParked
// decoded (handed out once), or decoded now.
func (r *run) parkedRecord(e *bindings.JournalEntry) (parkRecord, error) {
	for i := range r.parkedDecoded {
		if p := &r.parkedDecoded[i]; p.key == e.Key {
			pr := p.pr
			r.parkedDecoded = slices.Delete(r.parkedDecoded, i, i+1)
			return pr, nil
		}
	}
	var pr parkRecord
	err := unmarshalIn(e.Output, &pr, r.inPlace(e))
	return pr, err
}

// names are the member names of a type in the order its encoder writes
// them, and the same quoted with their colon, for keyIn.
type names struct {
	plain, quoted []string
}

func newNames(ns ...string) names {
	q := make([]string, len(ns))
	for i, n := range ns {
		q[i] = `"` + n + `":`
	}
	return names{plain: ns, quoted: q}
}

// keyIn reads a member name as key does, first trying the names of ns
// from *next on — the encoder's order, so the member is usually *next or
// one just past fields it omitted — by comparing the quoted name and its
// colon in place; any other name (or spacing) goes to key.
func (d *jdec) keyIn(ns *names, next *int) string {
	if d.i < len(d.s) && d.s[d.i] == '"' {
		rest := d.s[d.i:]
		for j := *next; j < len(ns.quoted); j++ {
			if strings.HasPrefix(rest, ns.quoted[j]) {
				d.i += len(ns.quoted[j])
				*next = j + 1
				return ns.plain[j]
			}
		}
	}
	return d.key()
}

// The member names of the decoded types, in their encoders' order.
var (
	namesToolCalls           = newNames("id", "name", "arguments")
	namesChatMessages        = newNames("role", "content", "toolCalls", "toolCallId")
	namesConversationMessage = newNames("tenantId", "conversationId", "id", "seq", "role", "content", "toolCalls", "toolCallId", "turnNumber", "runId", "participantId", "metadata", "createdAt")
	namesUsage               = newNames("inputTokens", "outputTokens", "costUsd")
	namesResponse            = newNames("text", "toolCalls", "finishReason", "model", "usage")
	namesCallPlans           = newNames("id", "key", "toolId", "toolVersion", "arguments", "action", "status", "message", "reviewerRole", "reason")
	namesToolResult          = newNames("status", "output", "error")
	namesBudget              = newNames("modelCalls", "costUsd", "elapsedMs")
	namesApprovalOutcome     = newNames("status", "approvalId", "reviewer", "comment", "nextRole")
	namesApprovalRequest     = newNames("tenantId", "id", "runId", "conversationId", "toolCallId", "toolId", "toolVersion", "arguments", "reviewerRole", "reason", "createdAt", "expiresAt")
	namesParkRecord          = newNames("request", "elapsedMs")
	namesComposeRecord       = newNames("status", "messageId")
	namesInput               = newNames("tenantId", "projectId", "conversationId", "userMessage", "parameters", "participantId", "dryRun", "principal", "runId")
	namesInput1              = newNames("id", "roles")
	namesSetup               = newNames("now", "turnNumber", "tools", "guardrails", "policy", "route", "model", "hitl", "sessionGate", "budget", "historyLimit")
	namesTools               = newNames("id", "version", "description", "inputSchema", "outputSchema", "secrets", "env", "config", "annotations", "gate")
	namesAnnotations         = newNames("title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
	namesGuardrails          = newNames("id", "kind", "checkId", "action", "config")
	namesPolicy              = newNames("allowProviders", "denyProviders", "allowModels", "denyModels", "maxCostUsd", "maxSteps", "maxWallMs", "hitl")
	namesHitlSpec            = newNames("maxTimeoutMs", "minReviewerRole", "toolFloors", "onTimeout", "afterTurns")
	namesRoute               = newNames("provider", "model")
	namesModel               = newNames("id", "features", "contextWindow", "inputPricePerMTok", "outputPricePerMTok")
	namesHitl                = newNames("timeoutMs", "reviewerRole", "onTimeout", "afterTurns", "toolGates", "toolFloors")
	namesHitl1               = newNames("default", "overrides")
	namesSessionGate         = newNames("required", "afterTurns", "turnNumber", "reason")
	namesBudgetCaps          = newNames("maxSteps", "maxCostUsd", "maxWallMs", "maxToolCalls")
)
