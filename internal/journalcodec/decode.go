package journalcodec

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Decode decodes raw into *v, which must be the zero value, when raw is in
// a form the codec reads (see the package doc); it reports false (and *v
// is to be discarded) otherwise. With shared set, the caller vouches that
// no one ever writes raw's bytes again: the strings decoded share them
// instead of a copy (see the package doc).
func Decode[T any](raw []byte, v *T, shared bool) bool {
	d := decoder{b: raw}
	if shared {
		d.s = sharedString(raw)
	} else {
		d.s = string(raw)
	}
	d.value(descriptorOf[T](), unsafe.Pointer(v), 0)
	return d.end()
}

// Unmarshal is json.Unmarshal(raw, v) for a zero *v, through Decode when it
// reads raw (shared as Decode has it).
func Unmarshal[T any](raw []byte, v *T, shared bool) error {
	if Decode(raw, v, shared) {
		return nil
	}
	// encoding/json decodes into a value of its own, so that v does not
	// escape: a caller's value stays on its stack when Decode reads raw
	// (the usual case).
	p := new(T)
	err := json.Unmarshal(raw, p)
	*v = *p
	return err
}

// sharedString is raw's bytes as a string, sharing them. The caller of
// Decode vouches (shared) that no one writes them again while the process
// runs: a Go string's bytes must never change.
func sharedString(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(raw), len(raw))
}

// decoder reads one JSON document. A failure sets bad and moves to the
// end: every later read fails too and the caller falls back to
// encoding/json.
type decoder struct {
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

// value reads the value of descriptor c into the zero value at p.
func (d *decoder) value(c *codec, p unsafe.Pointer, depth int) {
	if d.bad {
		return
	}
	if depth > maxDepth {
		d.fail()
		return
	}
	switch c.kind {
	case kString:
		*(*string)(p) = d.str()
	case kBool:
		*(*bool)(p) = d.boolv()
	case kInt:
		*(*int)(p) = int(d.integer(strconv.IntSize))
	case kInt64:
		*(*int64)(p) = d.integer(64)
	case kInt32:
		*(*int32)(p) = int32(d.integer(32))
	case kIntN:
		n := d.integer(int(c.size) * 8)
		if c.size == 1 {
			*(*int8)(p) = int8(n)
		} else {
			*(*int16)(p) = int16(n)
		}
	case kUint:
		lit, isInt := d.number()
		n, err := strconv.ParseUint(lit, 10, int(c.size)*8)
		if d.bad || !isInt || err != nil {
			d.fail()
			return
		}
		switch c.size {
		case 1:
			*(*uint8)(p) = uint8(n)
		case 2:
			*(*uint16)(p) = uint16(n)
		case 4:
			*(*uint32)(p) = uint32(n)
		default:
			*(*uint64)(p) = n
		}
	case kFloat64:
		*(*float64)(p) = d.float()
	case kFloat32:
		*(*float32)(p) = float32(d.floatBits(32))
	case kRaw:
		*(*json.RawMessage)(p) = d.raw()
	case kTime:
		*(*timeValue)(p) = d.timev()
	case kStruct:
		d.object(c, p, depth)
	case kBytes:
		if !d.null() { // base64: encoding/json's
			d.fail()
		}
	case kSlice:
		if d.null() {
			return
		}
		// The backing array is reflect's (typed: the collector knows its
		// pointers), grown as append grows one; the slice is stored at p
		// once read, so that p (a caller's value, often on its stack) does
		// not escape.
		s := sliceHeader{data: unsafe.Pointer(&emptyArray)} // [] is an empty slice, not nil
		var arr reflect.Value                               // the backing array
		for more := d.arrStart(); more; more = d.arrNext() {
			if s.len == s.cap {
				s.cap = max(1, 2*s.cap)
				if s.len == 0 {
					s.cap = d.lengthHint(c, depth)
				}
				grown := reflect.New(c.arrayOf(s.cap))
				if s.len > 0 {
					reflect.Copy(grown.Elem(), arr)
				}
				arr, s.data = grown.Elem(), grown.UnsafePointer()
			}
			s.len++
			if c.elem.kind == kUnmarshaler {
				d.unmarshalInto(arr.Index(s.len - 1).Addr())
			} else {
				d.value(c.elem, at(s.data, uintptr(s.len-1)*c.size), depth+1)
			}
		}
		*(*sliceHeader)(p) = s
	case kPtr:
		if d.null() {
			return
		}
		q := reflect.New(c.elem.typ)
		if c.elem.kind == kUnmarshaler {
			d.unmarshalInto(q)
		} else {
			d.value(c.elem, q.UnsafePointer(), depth+1)
		}
		*(*unsafe.Pointer)(p) = q.UnsafePointer()
	case kMap:
		if d.null() {
			return
		}
		m := reflect.MakeMap(c.typ)
		k := reflect.New(c.typ.Key()).Elem() // SetMapIndex copies the key and the value
		e := reflect.New(c.elem.typ)
		for more := d.objStart(); more; more = d.objNext() {
			k.SetString(d.mapKey())
			e.Elem().SetZero()
			if c.elem.kind == kUnmarshaler {
				d.unmarshalInto(e)
			} else {
				d.value(c.elem, e.UnsafePointer(), depth+1)
			}
			m.SetMapIndex(k, e.Elem())
		}
		*(*unsafe.Pointer)(p) = m.UnsafePointer() // a map value is its pointer
	case kAny:
		*(*any)(p) = d.anyv(depth)
	default: // kOpaque; a kUnmarshaler in place (a struct field) is
		// encoding/json's too: handing its address to UnmarshalJSON would
		// make every value decoded escape.
		d.fail()
	}
}

// lengthHint is the capacity a slice of descriptor c starts with: for a
// document that is a list of structs, how many objects open with the
// member its elements' encoding opens with (the initial messages: each
// opens with its role, rounded up to a power of two), so that the list is
// allocated once; 1 otherwise.
func (d *decoder) lengthHint(c *codec, depth int) int {
	if depth > 0 || c.elem.kind != kStruct || len(c.elem.keys) == 0 {
		return 1
	}
	n := strings.Count(d.s[d.i-1:], "{"+c.elem.keys[0])
	return 1 << bits.Len(uint(max(n, 1)-1)) // a power of two (see arrayOf)
}

// sliceHeader is how a slice is laid out: kSlice stores one it built.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// emptyArray is where an empty slice's data points (any address but nil:
// a nil pointer is a nil slice).
var emptyArray [0]uint64

// unmarshalInto reads a value by handing its bytes to the UnmarshalJSON
// of ptr (a new pointer to a kUnmarshaler type), as encoding/json does.
func (d *decoder) unmarshalInto(ptr reflect.Value) {
	if d.peek() == 'n' { // encoding/json's handling of null is its own
		d.fail()
		return
	}
	d.ws()
	start := d.i
	d.skip()
	if d.bad || ptr.Interface().(json.Unmarshaler).UnmarshalJSON(d.b[start:d.i]) != nil {
		d.fail()
	}
}

// object reads a struct: each member once, each a field of c (any other
// name fails: encoding/json matches names without regard to case).
func (d *decoder) object(c *codec, p unsafe.Pointer, depth int) {
	var seen uint64
	next := 0
	for more := d.objStart(); more; more = d.objNext() {
		j := d.keyIn(c, &next)
		if j < 0 || seen&(1<<j) != 0 {
			d.fail()
			return
		}
		seen |= 1 << j
		f := &c.fields[j]
		if f.c.kind == kString { // most fields: no second dispatch
			*(*string)(at(p, f.off)) = d.str()
			continue
		}
		d.value(f.c, at(p, f.off), depth+1)
	}
}

func (d *decoder) fail() {
	d.bad = true
	d.i = len(d.s)
}

// end reports whether the document was read without a failure, to its
// end (trailing whitespace allowed).
func (d *decoder) end() bool {
	d.ws()
	return !d.bad && d.i == len(d.s)
}

func (d *decoder) ws() {
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
func (d *decoder) peek() byte {
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
func (d *decoder) eat(c byte) bool {
	if d.peek() == c {
		d.i++
		return true
	}
	return false
}

func (d *decoder) want(c byte) {
	if !d.eat(c) {
		d.fail()
	}
}

// objStart reads '{' and reports whether a member follows.
func (d *decoder) objStart() bool {
	if !d.eat('{') {
		d.fail()
		return false
	}
	return !d.eat('}')
}

// objNext reads what follows a member's value and reports whether
// another member follows.
func (d *decoder) objNext() bool {
	if d.i < len(d.s) && d.s[d.i] == ',' { // the usual: no space, another member
		d.i++
		return true
	}
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
func (d *decoder) arrStart() bool {
	if !d.eat('[') {
		d.fail()
		return false
	}
	return !d.eat(']')
}

// arrNext reads what follows an element and reports whether another
// element follows.
func (d *decoder) arrNext() bool {
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
func (d *decoder) key() string {
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
func (d *decoder) mapKey() string {
	k := d.key()
	for i := 0; i < len(k); i++ {
		if !strPlain[k[i]] {
			d.fail()
			return ""
		}
	}
	return k
}

// str reads a string.
func (d *decoder) str() string {
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

// notPlain8's lowest set bit is the high bit of the first byte of w
// (eight bytes of a document, the first lowest) that is not strPlain — a
// control, a non-ASCII byte, the quote, the backslash — or it is zero
// when there is none. As in escape8: w's own high bit flags a non-ASCII
// byte, and for an ASCII byte each test is "some byte is zero", where
// subtracting 0x01 (0x20) from each byte borrows into a high bit exactly
// when one is zero (below 0x20), and a borrow carries only upward, from
// a byte the test matched.
func notPlain8(w uint64) uint64 {
	const lo01, lo20, hi80 = 0x0101010101010101, 0x2020202020202020, 0x8080808080808080
	return (w | (w - lo20) | ((w ^ 0x22*lo01) - lo01) | ((w ^ 0x5c*lo01) - lo01)) & hi80
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
func (d *decoder) strSlow(start, j int) string {
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
func (d *decoder) number() (string, bool) {
	d.ws()
	start := d.i
	end, isInt := numberEnd(d.s, start)
	if end < 0 {
		d.fail()
		return "", false
	}
	d.i = end
	return d.s[start:end], isInt
}

// numberEnd returns the index after the number literal at s[i:] (JSON's
// grammar) and whether it is an integer, or -1.
func numberEnd[S string | []byte](s S, i int) (int, bool) {
	digits := func() bool {
		k := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > k
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case !digits():
		return -1, false
	}
	isInt := true
	if i < len(s) && s[i] == '.' {
		i++
		isInt = false
		if !digits() {
			return -1, false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		isInt = false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return -1, false
		}
	}
	return i, isInt
}

// integer reads an integer literal that fits in bits, as strconv.ParseInt
// (which encoding/json uses) reads it: by hand up to 18 digits (no
// overflow possible), by ParseInt beyond.
func (d *decoder) integer(bits int) int64 {
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

func (d *decoder) float() float64 { return d.floatBits(64) }

// floatBits reads a number as strconv.ParseFloat(lit, bits) reads it
// (which encoding/json uses).
func (d *decoder) floatBits(bits int) float64 {
	lit, _ := d.number()
	if d.bad {
		return 0
	}
	f, err := strconv.ParseFloat(lit, bits)
	if err != nil {
		d.fail()
	}
	return f
}

func (d *decoder) boolv() bool {
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
func (d *decoder) raw() json.RawMessage {
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
// maxDepth deep.
func (d *decoder) skip() {
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
				if depth == maxDepth {
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
			case 't', 'f', 'n':
				i = scanLiteral(s, i)
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

// scanLiteral returns the index after the literal (true, false or null)
// that starts at s[i], or -1.
func scanLiteral[S string | []byte](s S, i int) int {
	lit := "null"
	switch s[i] {
	case 't':
		lit = "true"
	case 'f':
		lit = "false"
	}
	if len(s)-i < len(lit) || string(s[i:i+len(lit)]) != lit {
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
func (d *decoder) null() bool {
	if d.peek() == 'n' {
		d.literal("null")
		return true
	}
	return false
}

func (d *decoder) literal(lit string) {
	if !strings.HasPrefix(d.s[d.i:], lit) {
		d.fail()
		return
	}
	d.i += len(lit)
}

// skipString reads a string (at its quote) without decoding it.
func (d *decoder) skipString() {
	if d.i = scanString(d.s, d.i); d.i < 0 {
		d.fail()
	}
}

// anyv reads a value as json.Unmarshal into an interface does: objects as
// map[string]any, arrays as []any, numbers as float64.
func (d *decoder) anyv(depth int) any {
	if depth > maxDepth {
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

// keyIn reads a member name and returns the index of its field of c, or
// -1 for any other. It first tries the names from *next on — the
// encoder's order, so the member is usually *next or one just past
// fields it omitted — comparing in place: the document's next 24 bytes as
// three words with a field's keyWords, when both have them; any other
// name (or spacing) is read by key.
func (d *decoder) keyIn(c *codec, next *int) int {
	if d.i < len(d.s) && d.s[d.i] == '"' {
		rest := d.s[d.i:]
		var w0, w1, w2 uint64
		wide := len(rest) >= commaRoom
		if wide {
			w0, w1, w2 = loadString8(rest, 0), loadString8(rest, 8), loadString8(rest, 16)
		}
		for j := *next; j < len(c.fields); j++ {
			f := &c.fields[j]
			var match bool
			if wide && f.keyLen > 0 {
				match = (w0^f.keyWords[0])&f.keyMasks[0]|(w1^f.keyWords[1])&f.keyMasks[1]|(w2^f.keyWords[2])&f.keyMasks[2] == 0
			} else {
				match = strings.HasPrefix(rest, f.key)
			}
			if match {
				d.i += len(f.key)
				*next = j + 1
				return j
			}
		}
	}
	k := d.key()
	for j, q := range c.keys {
		if len(q) == len(k)+3 && q[1:len(q)-2] == k {
			return j
		}
	}
	return -1
}
