package journalcodec

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/kindgi/agents/internal/jsonscan"
)

// Options are what a caller knows of the value it encodes.
type Options struct {
	// Quoted, when QuotedJSON is set, is a string whose JSON is
	// QuotedJSON: a string equal to it is written as those bytes, without
	// quoting it again (the rendered prompt, which the initial messages'
	// system message holds again).
	Quoted     string
	QuotedJSON []byte
	// RawChecked says every json.RawMessage in the value is known to be
	// written as it is (valid, compact, HTML-safe JSON), checked where it
	// entered: the encoder copies them without checking them again.
	RawChecked bool
}

// Append appends json.Marshal(*v) to b and reports true, or reports false
// when the value holds something the codec leaves to encoding/json (and
// what it appended is to be dropped).
func Append[T any](b []byte, v *T, o *Options) ([]byte, bool) {
	e := encoder{ok: true, o: o}
	if e.o == nil {
		e.o = &noOptions
	}
	b = e.value(b, descriptorOf[T](), unsafe.Pointer(v), 0)
	return b, e.ok
}

// Marshal is json.Marshal(*v), appended to b (from its start: b is room
// to write into, or nil for a buffer of its own).
func Marshal[T any](b []byte, v *T, o *Options) ([]byte, error) {
	if b == nil {
		b = make([]byte, 0, 512)
	}
	if out, ok := Append(b[:0], v, o); ok {
		return out, nil
	}
	return json.Marshal(*v)
}

var noOptions Options

// encoder appends one value's JSON; ok turns false at the first value it
// leaves to encoding/json, and then nothing more is written. The bytes are
// not the encoder's: each method takes the buffer and returns it, so that
// it lives in registers and on the stack — a slice stored through a
// pointer is a write barrier each time while the collector marks.
type encoder struct {
	ok bool
	o  *Options
}

func (e *encoder) fail() { e.ok = false }

// value appends the value of descriptor c at p to b.
func (e *encoder) value(b []byte, c *codec, p unsafe.Pointer, depth int) []byte {
	if !e.ok {
		return b
	}
	switch c.kind {
	case kString:
		return e.str(b, *(*string)(p))
	case kBool:
		return strconv.AppendBool(b, *(*bool)(p))
	case kInt:
		return appendInt(b, int64(*(*int)(p)))
	case kInt64:
		return appendInt(b, *(*int64)(p))
	case kInt32:
		return appendInt(b, int64(*(*int32)(p)))
	case kIntN:
		return appendInt(b, intAt(p, c.size))
	case kUint:
		return strconv.AppendUint(b, uintAt(p, c.size), 10)
	case kFloat64:
		b, e.ok = AppendFloat(b, *(*float64)(p))
		return b
	case kFloat32:
		b, e.ok = appendFloat32(b, *(*float32)(p))
		return b
	case kRaw:
		switch r := *(*json.RawMessage)(p); {
		case r == nil:
			return append(b, "null"...)
		case len(r) > 0 && (e.o.RawChecked || RawAsIs(r)):
			return append(b, r...)
		}
	case kTime:
		b = append(b, '"')
		b, e.ok = AppendTime(b, *(*timeValue)(p))
		return append(b, '"')
	case kStruct:
		if depth >= maxDepth {
			break
		}
		return e.object(b, c, p, depth)
	case kSlice:
		s := *(*[]byte)(p) // any slice's header: its data pointer and length
		if s == nil {
			return append(b, "null"...)
		}
		if depth >= maxDepth {
			break
		}
		b = append(b, '[')
		base := unsafe.Pointer(unsafe.SliceData(s))
		for i := range len(s) {
			if i > 0 {
				b = append(b, ',')
			}
			if b = e.value(b, c.elem, at(base, uintptr(i)*c.size), depth+1); !e.ok {
				return b
			}
		}
		return append(b, ']')
	case kPtr:
		q := *(*unsafe.Pointer)(p)
		if q == nil {
			return append(b, "null"...)
		}
		if depth >= maxDepth {
			break
		}
		return e.value(b, c.elem, q, depth+1)
	case kMap:
		// encoding/json sorts a map's keys, and its length is
		// reflection's to tell: a map that is not nil is encoding/json's.
		if *(*unsafe.Pointer)(p) == nil {
			return append(b, "null"...)
		}
	case kAny:
		if *(*any)(p) == nil {
			return append(b, "null"...)
		}
	case kBytes:
		v := *(*[]byte)(p)
		if v == nil {
			return append(b, "null"...)
		}
		// encoding/json's encodeByteSlice: standard, padded base64.
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v)
		return append(b, '"')
	}
	// kOpaque, kUnmarshaler, and any value above left to encoding/json.
	e.fail()
	return b
}

// object appends the struct of descriptor c at p to b. Each member is
// written with its comma; the first's becomes the object's brace.
//
// The loop is the encoder's hot spot (a turn writes some 170 fields of 30
// objects, 50 of them strings), so its usual cases call nothing: while b
// has room (commaRoom bytes past the member, which the stores may
// scribble on and the next member overwrites), a member's comma is three
// word stores and a plain string member is copied, and checked, a word at
// a time (putPlain). Anything else — no room, a string with a byte to
// escape, a comma longer than commaRoom, Options.Quoted — takes the
// general path, which rewrites the member from its start.
func (e *encoder) object(b []byte, c *codec, p unsafe.Pointer, depth int) []byte {
	start := len(b)
	fields := c.fields // not reloaded from c after each call
	quoted := e.o.QuotedJSON != nil
	for i := range fields {
		f := &fields[i]
		fp := at(p, f.off)
		if f.skip != skipNever { // most fields: one test
			switch f.skip {
			case skipLen:
				if lenAt(fp) == 0 {
					continue
				}
			case skipNil:
				if *(*unsafe.Pointer)(fp) == nil {
					continue
				}
			case skipZero8:
				if *(*uint64)(fp) == 0 {
					continue
				}
			case skipAsk:
				if e.omit(f, fp) {
					if !e.ok {
						return b
					}
					continue
				}
			}
		}
		n := len(b)
		if f.kind == kString && !quoted {
			s := *(*string)(fp)
			if k := f.commaLen; k > 0 && cap(b)-n >= commaRoom+2+len(s) {
				out := b[n:cap(b)]
				putComma(out, f)
				out[k] = '"'
				if putPlain(out[k+1:], s) {
					out[k+1+len(s)] = '"'
					b = b[:n+k+2+len(s)]
					continue
				}
			}
			b = append(b, f.comma...)
			if b = e.str(b, s); !e.ok {
				return b
			}
			continue
		}
		if k := f.commaLen; k > 0 && cap(b)-n >= commaRoom {
			putComma(b[n:cap(b)], f)
			b = b[:n+k]
		} else {
			b = append(b, f.comma...)
		}
		if b = e.value(b, f.c, fp, depth+1); !e.ok {
			return b
		}
	}
	if len(b) == start {
		return append(b, "{}"...)
	}
	b[start] = '{'
	return append(b, '}')
}

// commaRoom is the room the encoder's word stores need past a member's
// start: a comma of up to commaRoom bytes is written as three words.
const commaRoom = 24

// putComma writes f's comma at the start of out, and zeros up to
// commaRoom: out has at least commaRoom bytes, and f.commaLen > 0.
func putComma(out []byte, f *field) {
	_ = out[commaRoom-1]
	binary.LittleEndian.PutUint64(out, f.commaWords[0])
	binary.LittleEndian.PutUint64(out[8:], f.commaWords[1])
	binary.LittleEndian.PutUint64(out[16:], f.commaWords[2])
}

// putPlain copies s to the start of dst (at least as long) and reports
// true when every byte of s is jsonPlain; otherwise it reports false,
// having written some of dst. By words of eight bytes, the last one
// overlapping the one before it, and a string of four to seven bytes as
// two overlapping halves of one word; the words' escapeBits are or-ed, and
// tested once.
func putPlain(dst []byte, s string) bool {
	n := len(s)
	switch {
	case n >= 8:
		dst = dst[:n]
		var esc uint64
		for i := 0; i < n-8; i += 8 {
			w := loadString8(s, i)
			esc |= escapeBits(w)
			binary.LittleEndian.PutUint64(dst[i:], w)
		}
		w := loadString8(s, n-8)
		binary.LittleEndian.PutUint64(dst[n-8:], w)
		return (esc|escapeBits(w))&0x8080808080808080 == 0
	case n >= 4:
		dst = dst[:n]
		lo, hi := loadString4(s, 0), loadString4(s, n-4)
		binary.LittleEndian.PutUint32(dst, uint32(lo))
		binary.LittleEndian.PutUint32(dst[n-4:], uint32(hi))
		return escape8(lo|hi<<32) == 0
	}
	dst = dst[:n]
	for i := range n {
		c := s[i]
		if jsonPlain[c] == 0 {
			return false
		}
		dst[i] = c
	}
	return true
}

// appendInt is strconv.AppendInt(b, v, 10), the journal's usual counts
// (0 to 99: sequence and turn numbers, calls, small token counts) written
// from digitPairs without the general conversion.
func appendInt(b []byte, v int64) []byte {
	switch {
	case uint64(v) < 10:
		return append(b, byte('0'+v))
	case uint64(v) < 100:
		return append(b, digitPairs[2*v], digitPairs[2*v+1])
	}
	return strconv.AppendInt(b, v, 10)
}

// str appends s as a JSON string to b.
func (e *encoder) str(b []byte, s string) []byte {
	if q := e.o.QuotedJSON; q != nil && len(s) == len(e.o.Quoted) && s == e.o.Quoted {
		return append(b, q...)
	}
	b, e.ok = AppendString(b, s)
	return b
}

// omit reports whether encoding/json leaves field f, at p, out of its
// object (omitempty, omitzero). A value whose answer the codec cannot
// tell without calling into reflection or the type's IsZero method (which
// would make every value the encoder is handed escape to the heap) fails
// the encoding.
func (e *encoder) omit(f *field, p unsafe.Pointer) bool {
	c := f.c
	switch {
	case f.omitEmpty && c.kind == kMap:
		if *(*unsafe.Pointer)(p) != nil {
			e.fail() // its length is reflection's to tell
		}
		return true
	case f.omitEmpty && c.kind != kStruct && c.kind != kTime && c.kind != kOpaque && c.kind != kUnmarshaler:
		if c.empty(p) {
			return true
		}
	case f.omitEmpty && (c.kind == kOpaque || c.kind == kUnmarshaler):
		e.fail()
		return true
	}
	if !f.omitZero {
		return false
	}
	switch c.kind {
	case kTime:
		return (*timeValue)(p).IsZero()
	case kStruct, kOpaque, kUnmarshaler:
		break // below
	default:
		if c.zeroer { // its IsZero method says
			e.fail()
			return true
		}
		switch c.kind {
		case kFloat64:
			return math.Float64bits(*(*float64)(p)) == 0
		case kFloat32:
			return math.Float32bits(*(*float32)(p)) == 0
		case kRaw, kSlice, kBytes, kPtr, kMap, kAny:
			return *(*unsafe.Pointer)(p) == nil // a nil slice, map, pointer, or the type word of a nil interface
		}
		return c.empty(p)
	}
	// A struct (or any other value): one whose bytes are all zero is the
	// zero value, and its IsZero method, if it has one, says what it says
	// of the zero value (c.zeroIsZero); any other is left to encoding/json.
	for _, b := range unsafe.Slice((*byte)(p), c.size) {
		if b != 0 {
			e.fail()
			return true
		}
	}
	return !c.zeroer || c.zeroIsZero
}

// empty reports whether encoding/json's omitempty omits the value of c at
// p, for the kinds whose emptiness is their value: false, 0, a nil pointer
// or interface, an empty string, raw value or slice.
func (c *codec) empty(p unsafe.Pointer) bool {
	switch c.kind {
	case kString:
		return len(*(*string)(p)) == 0
	case kBool:
		return !*(*bool)(p)
	case kInt:
		return *(*int)(p) == 0
	case kInt64:
		return *(*int64)(p) == 0
	case kInt32:
		return *(*int32)(p) == 0
	case kIntN:
		return intAt(p, c.size) == 0
	case kUint:
		return uintAt(p, c.size) == 0
	case kFloat64:
		return *(*float64)(p) == 0
	case kFloat32:
		return *(*float32)(p) == 0
	case kRaw, kSlice, kBytes:
		return len(*(*[]byte)(p)) == 0
	case kPtr:
		return *(*unsafe.Pointer)(p) == nil
	case kAny:
		return *(*any)(p) == nil
	}
	return false
}

// RawAsIs reports whether json.Marshal writes raw as it is: one valid
// JSON value in UTF-8 with nothing its compaction removes or escapes (no
// whitespace between tokens, no '<', '>', '&', U+2028 or U+2029; any
// 0xE2 byte is declined, as it may start either). One pass over raw.
func RawAsIs(raw json.RawMessage) bool {
	var stack uint64 // for each open container, 1 an object, 0 an array
	depth, i, n := 0, 0, len(raw)
	for {
		// A value starts at i.
		if i >= n {
			return false
		}
		switch c := raw[i]; c {
		case '{', '[':
			if depth == maxDepth {
				return false
			}
			i++
			if i < n && raw[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				i++
				break
			}
			stack <<= 1
			if c == '{' {
				stack |= 1
				if i = compactKey(raw, i); i < 0 {
					return false
				}
			}
			depth++
			continue
		case '"':
			i = compactString(raw, i)
		case 't', 'f', 'n':
			i = scanLiteral([]byte(raw), i)
		default:
			i, _ = numberEnd([]byte(raw), i)
		}
		if i < 0 {
			return false
		}
		// A value ended at i: close containers until another value follows.
		for {
			if depth == 0 {
				return i == n
			}
			if i >= n {
				return false
			}
			obj := stack&1 == 1
			if raw[i] == ',' {
				i++
				if obj {
					if i = compactKey(raw, i); i < 0 {
						return false
					}
				}
				break
			}
			if obj && raw[i] != '}' || !obj && raw[i] != ']' {
				return false
			}
			i++
			stack >>= 1
			depth--
		}
	}
}

// compactKey reads a member's name and colon at raw[i:] and returns the
// index after them, or -1.
func compactKey(raw []byte, i int) int {
	if i >= len(raw) || raw[i] != '"' {
		return -1
	}
	if i = compactString(raw, i); i < 0 || i >= len(raw) || raw[i] != ':' {
		return -1
	}
	return i + 1
}

// compactString reads the string whose quote is at raw[i] and returns the
// index after it, or -1 when it is not valid or holds a byte compaction
// escapes.
func compactString(raw []byte, i int) int {
	n := len(raw)
	for j := i + 1; ; {
		for ; j+8 <= n; j += 8 {
			if m := escape8(binary.LittleEndian.Uint64(raw[j:])); m != 0 {
				j += bits.TrailingZeros64(m) >> 3
				goto found
			}
		}
		for j < n && jsonPlain[raw[j]] != 0 {
			j++
		}
	found:
		if j >= n {
			return -1
		}
		switch c := raw[j]; {
		case c == '"':
			return j + 1
		case c == '\\':
			k := jsonscan.EscapeLen(raw, j)
			if k == 0 {
				return -1
			}
			j += k
		case c < utf8.RuneSelf || c == 0xE2: // a control byte, '<', '>', '&'; maybe U+2028, U+2029
			return -1
		default:
			r, size := utf8.DecodeRune(raw[j:])
			if r == utf8.RuneError && size == 1 {
				return -1
			}
			j += size
		}
	}
}

// NeedsCompact reports whether json.Marshal's compaction of a JSON
// document would change it: whitespace between tokens, or '<', '>', '&'
// or the first byte of U+2028 or U+2029 (0xE2, which also starts other
// characters: those are then compacted needlessly, which changes nothing)
// inside or outside a string.
func NeedsCompact(raw []byte) bool {
	n := len(raw)
	for i := 0; i < n; i++ {
		switch raw[i] {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xE2:
			return true
		case '"':
			for i++; i < n; i++ {
				// Inside a string only a quote, a backslash, '<', '>', '&'
				// and 0xE2 matter: words with none of the bytes escape8
				// finds (a superset) are passed over whole.
				for i+8 <= n {
					if m := escape8(binary.LittleEndian.Uint64(raw[i:])); m != 0 {
						i += bits.TrailingZeros64(m) >> 3
						break
					}
					i += 8
				}
				if i >= n {
					return false
				}
				c := raw[i]
				if c == '"' {
					break
				}
				if c == '\\' {
					i++ // the escaped byte cannot end the string
				} else if c == '<' || c == '>' || c == '&' || c == 0xE2 {
					return true
				}
			}
		}
	}
	return false
}

// AppendString appends s quoted as encoding/json quotes it, for the
// strings it can: printable ASCII, \n, \r and \t. It reports false for
// any other byte (json.Marshal has the answer for those).
func AppendString(b []byte, s string) ([]byte, bool) {
	if n := len(b); cap(b)-n >= len(s)+2 { // the usual: room, nothing to escape
		out := b[:n+len(s)+2]
		out[n] = '"'
		if putPlain(out[n+1:], s) {
			out[len(out)-1] = '"'
			return out, true
		}
	}
	// A word at a time while it is plain; at a word with a byte to
	// escape, its plain bytes (the word is stored whole, and the escape
	// written over the rest), then the escape. Every step writes at most
	// escapeRoom bytes, which out is grown to hold before it.
	out := slices.Grow(b, len(s)+escapeRoom)
	k := len(out)
	out = out[:cap(out)]
	out[k] = '"'
	k++
	for i := 0; i < len(s); {
		if len(out)-k < escapeRoom {
			out = slices.Grow(out[:k], len(s)-i+escapeRoom)
			out = out[:cap(out)]
		}
		if i+8 <= len(s) {
			w := loadString8(s, i)
			binary.LittleEndian.PutUint64(out[k:], w)
			m := escape8(w)
			if m == 0 {
				i, k = i+8, k+8
				continue
			}
			z := bits.TrailingZeros64(m) >> 3
			i, k = i+z, k+z
		} else if c := s[i]; jsonPlain[c] != 0 {
			out[k] = c
			i, k = i+1, k+1
			continue
		}
		switch c := s[i]; c { // not jsonPlain
		case '"', '\\':
			out[k], out[k+1] = '\\', c
			k += 2
		case '\n':
			out[k], out[k+1] = '\\', 'n'
			k += 2
		case '\r':
			out[k], out[k+1] = '\\', 'r'
			k += 2
		case '\t':
			out[k], out[k+1] = '\\', 't'
			k += 2
		case '<', '>', '&': // \u003c, \u003e, \u0026, as json.Marshal writes them
			const hex = "0123456789abcdef"
			out[k], out[k+1], out[k+2], out[k+3], out[k+4], out[k+5] = '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF]
			k += 6
		default: // a control byte or a non-ASCII one
			return b, false
		}
		i++
	}
	out[k] = '"'
	return out[:k+1], true
}

// escapeRoom is what AppendString's general loop needs free before a
// step: a word (8 bytes) stored whole, or the plain bytes of one (at most
// 7) and an escape after them (at most 6), and the closing quote.
const escapeRoom = 16

// loadString4 is the four bytes of s from i as a little-endian word;
// i+4 ≤ len(s).
func loadString4(s string, i int) uint64 {
	b := s[i : i+4]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24
}

// loadString8 is the eight bytes of s from i as a little-endian word (the
// first lowest); i+8 ≤ len(s).
func loadString8(s string, i int) uint64 {
	b := s[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// escape8 is not zero exactly when one of the eight bytes of w (the
// first lowest) is not jsonPlain — a control byte, a non-ASCII one, the
// quote, the backslash, '<', '>' or '&' — and its lowest set bit is the
// high bit of the first such byte. For a word of ASCII bytes each test is
// "some byte is zero" on a word whose bytes are all below 0x80, where a
// subtraction of 0x01 from each byte borrows into a high bit exactly when
// one is zero (and a borrow only carries upward, from a byte the test
// matched): v|0x02 is 0x3E for '<' and '>' alone, v|0x04 is 0x26 for '"'
// and '&' alone; w itself has the high bit of a non-ASCII byte, and the
// bytes below the first one not plain set none.
func escape8(w uint64) uint64 { return escapeBits(w) & 0x8080808080808080 }

// escapeBits is escape8 before its mask: only each byte's high bit
// means anything, so words' escapeBits may be or-ed and masked once.
func escapeBits(w uint64) uint64 {
	const lo01 = 0x0101010101010101
	angle := (w | 0x02*lo01) ^ 0x3e*lo01
	quoteAmp := (w | 0x04*lo01) ^ 0x26*lo01
	backslash := w ^ 0x5c*lo01
	return w | (w - 0x20*lo01) | (angle - lo01) | (quoteAmp - lo01) | (backslash - lo01)
}

// jsonPlain holds the bytes AppendString copies as they are: printable
// ASCII but the quote, the backslash and <, >, & (which json.Marshal
// escapes), as 1 (and every other byte as 0).
var jsonPlain = func() (t [256]uint8) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		if c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
			t[c] = 1
		}
	}
	return t
}()

// AppendFloat appends f as json.Marshal writes a float64 in the range it
// writes without an exponent (0, and 1e-6 ≤ |f| < 1e21); it reports false
// for anything else (an exponent, NaN, ±Inf).
func AppendFloat(b []byte, f float64) ([]byte, bool) {
	if a := math.Abs(f); a != 0 && !(a >= 1e-6 && a < 1e21) { // also NaN, Inf
		return b, false
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64), true
}

// appendFloat32 is AppendFloat for a float32, as json.Marshal writes one
// (its shortest decimal as a float32).
func appendFloat32(b []byte, f float32) ([]byte, bool) {
	if a := math.Abs(float64(f)); a != 0 && !(a >= 1e-6 && a < 1e21) {
		return b, false
	}
	return strconv.AppendFloat(b, float64(f), 'f', -1, 32), true
}
