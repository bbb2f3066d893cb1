package journalcodec

import (
	"encoding"
	"encoding/binary"
	"encoding/json"
	"maps"
	"math/bits"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// kind is how the codec writes and reads a type.
type kind uint8

const (
	// kOpaque is a type the codec leaves to encoding/json both ways.
	kOpaque kind = iota
	// kBytes is a []byte (not a json.RawMessage): nil is null, any other
	// is written as encoding/json writes it (standard base64) and read by
	// encoding/json.
	kBytes
	kString
	kBool
	kInt
	kInt64
	kInt32
	// kIntN and kUint are the other signed and the unsigned integers, of
	// c.size bytes.
	kIntN
	kUint
	kFloat64
	kFloat32
	kRaw  // json.RawMessage
	kTime // time.Time
	kStruct
	kSlice
	kPtr
	kMap // map[string]V
	kAny // interface{}
	// kUnmarshaler is a type with its own UnmarshalJSON (and, as far as
	// the codec knows, MarshalJSON): decoded by handing it the value's
	// bytes, encoded by encoding/json.
	kUnmarshaler
)

// codec is the descriptor of one Go type.
type codec struct {
	typ  reflect.Type
	kind kind
	// elem is the element's descriptor (a slice's, a pointer's, a map's
	// value), and size its size in bytes (a slice's element).
	elem *codec
	size uintptr
	// fields are a struct's, in declaration order; keys are their names
	// quoted with their colon, for the decoder (keyIn).
	fields []field
	keys   []string
	// arrays are the array types [1]E, [2]E, [4]E … of a slice's
	// element, for the decoder's backing arrays (arrayOf).
	arrays []reflect.Type
	// zeroer reports that the type has an IsZero method (omitzero asks
	// it), and zeroIsZero what it says of the zero value.
	zeroer, zeroIsZero bool
}

// field is one exported struct field as encoding/json sees it.
type field struct {
	name string
	// key is `"name":`, and comma `,"name":`.
	key, comma string
	// commaWords is comma as three little-endian words (zero past its
	// end), when it fits in them (commaLen > 0): the encoder writes it
	// with three stores instead of a copy (putComma).
	commaWords [3]uint64
	commaLen   int
	// keyWords and keyMasks are key as three little-endian words and the
	// bytes of each it has, when it fits in them (keyLen > 0): the
	// decoder compares a document's next 24 bytes with them (keyIn).
	keyWords, keyMasks [3]uint64
	keyLen             int
	off                uintptr
	c                  *codec
	// kind is c.kind, and skip how the encoder tells that encoding/json
	// omits the field, both read without following c (set by finish once
	// c is complete).
	kind kind
	skip skip

	omitEmpty bool
	omitZero  bool
}

// skip is how the encoder tells that a field is omitted.
type skip uint8

const (
	// skipNever: no omitempty or omitzero.
	skipNever skip = iota
	// skipLen: omitted when its length is 0 (a slice, raw value or
	// []byte with omitempty, whatever omitzero would add; a string with
	// either option, its type without an IsZero method for omitzero).
	// Read by lenAt, the length word of either header.
	skipLen
	// skipNil: omitted when nil (a pointer with omitempty).
	skipNil
	// skipZero8: omitted when its eight bytes are zero (an int, int64 or
	// uint64 with omitempty or omitzero, its type without an IsZero
	// method for omitzero).
	skipZero8
	// skipAsk: encoder.omit tells.
	skipAsk
)

// finish sets f.kind and f.skip from f.c, once f.c is complete.
func (f *field) finish() {
	c := f.c
	f.kind = c.kind
	switch {
	case !f.omitEmpty && !f.omitZero:
		f.skip = skipNever
	case f.omitEmpty && !(f.omitZero && c.zeroer) && (c.kind == kSlice || c.kind == kRaw || c.kind == kBytes):
		f.skip = skipLen
	case c.kind == kString && !(f.omitZero && c.zeroer):
		// omitempty and omitzero both omit "", the only empty or zero
		// string, unless an IsZero method of its type has a say.
		f.skip = skipLen
	case f.omitEmpty && !(f.omitZero && c.zeroer) && c.kind == kPtr:
		f.skip = skipNil
	case !(f.omitZero && c.zeroer) && (c.kind == kInt || c.kind == kInt64 || c.kind == kUint) && c.size == 8:
		// omitempty and omitzero both omit 0, an integer's only empty
		// or zero value: all eight bytes zero.
		f.skip = skipZero8
	default:
		f.skip = skipAsk
	}
}

// maxFields bounds the fields of a struct the decoder reads (a bit each
// marks the fields seen).
const maxFields = 64

// maxDepth is the deepest nesting the codec writes or reads; deeper values
// go to encoding/json (whose own limit is far higher).
const maxDepth = 64

var (
	// descriptors holds each type compiled so far and its descriptor: a
	// table never written once published, replaced by one with the new
	// types (under compileMu) when a type is compiled. Every value encoded
	// or decoded starts with a lookup in it.
	descriptors atomic.Pointer[table]
	compileMu   sync.Mutex

	timeType      = reflect.TypeFor[time.Time]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	marshaler     = reflect.TypeFor[json.Marshaler]()
	unmarshaler   = reflect.TypeFor[json.Unmarshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarsh   = reflect.TypeFor[encoding.TextUnmarshaler]()
	zeroerType    = reflect.TypeFor[interface{ IsZero() bool }]()
)

// descriptorOf returns T's descriptor, compiling it the first time.
func descriptorOf[T any]() *codec { return descriptorFor(reflect.TypeFor[T]()) }

func descriptorFor(t reflect.Type) *codec {
	id := typeID(t)
	if m := descriptors.Load(); m != nil {
		if c := m.find(id); c != nil {
			return c
		}
	}
	compileMu.Lock()
	defer compileMu.Unlock()
	old := map[unsafe.Pointer]*codec{}
	if m := descriptors.Load(); m != nil {
		if c := m.find(id); c != nil {
			return c
		}
		old = m.all
	}
	building := map[reflect.Type]*codec{}
	c := compile(t, old, building)
	next := maps.Clone(old)
	for t, c := range building { // a recursive type's descriptors, complete now
		next[typeID(t)] = c
		for i := range c.fields {
			c.fields[i].finish()
		}
	}
	descriptors.Store(newTable(next))
	return c
}

// typeID is t's identity as one word: the address of its type descriptor.
// A reflect.Type is an interface whose value is always reflect's *rtype,
// a pointer to the runtime's descriptor of the type, and two are the same
// type exactly when they are the same pointer; the interface's data word
// is that pointer (TestTypeIDIsTheTypePointer holds it to reflect's own
// answer, reflect.ValueOf(t).UnsafePointer()).
func typeID(t reflect.Type) unsafe.Pointer { return (*[2]unsafe.Pointer)(unsafe.Pointer(&t))[1] }

// table is the published set of descriptors: all, and the same as an
// open-addressed table keyed by typeID — a multiply, a shift and, most
// often, one comparison, where a map lookup hashes the key through the
// runtime.
type table struct {
	all   map[unsafe.Pointer]*codec
	slots []slot
	shift uint
}

type slot struct {
	id unsafe.Pointer
	c  *codec
}

// newTable builds the table of all, its slots at most half full.
func newTable(all map[unsafe.Pointer]*codec) *table {
	n := 8
	for n < 2*len(all) {
		n *= 2
	}
	t := &table{all: all, slots: make([]slot, n), shift: uint(64 - bits.TrailingZeros(uint(n)))}
	for id, c := range all {
		i := t.home(id)
		for t.slots[i].id != nil {
			i = (i + 1) & (len(t.slots) - 1)
		}
		t.slots[i] = slot{id, c}
	}
	return t
}

// home is the slot where id's search starts.
func (t *table) home(id unsafe.Pointer) int {
	return int(uint64(uintptr(id)) * 0x9e3779b97f4a7c15 >> t.shift)
}

// find returns id's descriptor, or nil.
func (t *table) find(id unsafe.Pointer) *codec {
	for i := t.home(id); ; i = (i + 1) & (len(t.slots) - 1) {
		s := &t.slots[i]
		if s.id == id {
			return s.c
		}
		if s.id == nil {
			return nil
		}
	}
}

// compile builds t's descriptor; done holds the descriptors published
// already, building those being built, so that a recursive type refers to
// its own.
func compile(t reflect.Type, done map[unsafe.Pointer]*codec, building map[reflect.Type]*codec) *codec {
	if c, ok := building[t]; ok {
		return c
	}
	if c, ok := done[typeID(t)]; ok {
		return c
	}
	c := &codec{typ: t, size: t.Size()}
	building[t] = c
	if t.Implements(zeroerType) || reflect.PointerTo(t).Implements(zeroerType) {
		c.zeroer = true
		if k := t.Kind(); k != reflect.Pointer && k != reflect.Interface {
			c.zeroIsZero = reflect.New(t).Interface().(interface{ IsZero() bool }).IsZero()
		}
	}
	switch {
	case t == timeType:
		c.kind = kTime
		return c
	case t == rawType:
		c.kind = kRaw
		return c
	}
	if t.Kind() == reflect.Pointer { // nil is null; encoding/json looks through it
		c.kind, c.elem = kPtr, compile(t.Elem(), done, building)
		return c
	}
	pt := reflect.PointerTo(t)
	custom := t.Implements(marshaler) || pt.Implements(marshaler) || t.Implements(textMarshaler) || pt.Implements(textMarshaler)
	if pt.Implements(textUnmarsh) {
		return c // kOpaque
	}
	if pt.Implements(unmarshaler) {
		c.kind = kUnmarshaler
		return c
	}
	if custom {
		return c // writes itself, reads as its kind: left to encoding/json
	}
	switch t.Kind() {
	case reflect.String:
		c.kind = kString
	case reflect.Bool:
		c.kind = kBool
	case reflect.Int:
		c.kind = kInt
	case reflect.Int64:
		c.kind = kInt64
	case reflect.Int32:
		c.kind = kInt32
	case reflect.Int8, reflect.Int16:
		c.kind = kIntN
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		c.kind = kUint
	case reflect.Float64:
		c.kind = kFloat64
	case reflect.Float32:
		c.kind = kFloat32
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			c.kind = kBytes
			return c
		}
		c.kind, c.elem = kSlice, compile(t.Elem(), done, building)
		c.size = t.Elem().Size()
		for n := 1; n <= 16; n *= 2 {
			c.arrays = append(c.arrays, reflect.ArrayOf(n, t.Elem()))
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String || reflect.PointerTo(t.Key()).Implements(textUnmarsh) || t.Key().Implements(textMarshaler) {
			return c
		}
		c.kind, c.elem = kMap, compile(t.Elem(), done, building)
	case reflect.Interface:
		if t.NumMethod() == 0 {
			c.kind = kAny
		}
	case reflect.Struct:
		compileStruct(c, done, building)
	}
	return c
}

// compileStruct fills in a struct's fields as encoding/json lists them,
// or leaves the struct opaque when it has what the codec does not follow:
// an embedded field, a ",string" option, a name it would have to escape
// or that two fields share, more than maxFields fields.
func compileStruct(c *codec, done map[unsafe.Pointer]*codec, building map[reflect.Type]*codec) {
	t := c.typ
	var fs []field
	seen := map[string]bool{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			return
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		if !plainName(name) || seen[name] {
			return
		}
		seen[name] = true
		f := field{name: name, key: `"` + name + `":`, comma: `,"` + name + `":`, off: sf.Offset}
		if len(f.comma) <= commaRoom {
			f.commaWords, _ = words(f.comma)
			f.commaLen = len(f.comma)
		}
		if len(f.key) <= commaRoom {
			f.keyWords, f.keyMasks = words(f.key)
			f.keyLen = len(f.key)
		}
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "omitempty":
				f.omitEmpty = true
			case "omitzero":
				f.omitZero = true
			case "string":
				return
			}
		}
		f.c = compile(sf.Type, done, building)
		fs = append(fs, f)
	}
	if len(fs) > maxFields {
		return
	}
	c.kind, c.fields = kStruct, fs
	c.keys = make([]string, len(fs))
	for i := range fs {
		c.keys[i] = fs[i].key
	}
}

// words is s (at most commaRoom bytes) as three little-endian words,
// zero past its end, and the masks of the bytes s fills in each.
func words(s string) (w, mask [3]uint64) {
	var b, m [commaRoom]byte
	copy(b[:], s)
	for i := range len(s) {
		m[i] = 0xff
	}
	for i := range w {
		w[i], mask[i] = binary.LittleEndian.Uint64(b[8*i:]), binary.LittleEndian.Uint64(m[8*i:])
	}
	return w, mask
}

// plainName reports whether a JSON member name is written as it is: ASCII
// letters, digits, '_' and '-' (encoding/json would escape or refuse some
// others).
func plainName(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// at is the address off bytes into the value at p (a field of a struct,
// an element of an array): p points to a value of the descriptor that
// lists off (see the package doc).
func at(p unsafe.Pointer, off uintptr) unsafe.Pointer { return unsafe.Add(p, off) }

// lenAt reads the length of the string or slice whose header is at p:
// both headers hold their length in their second word (a slice's has its
// capacity after it). Read as that word alone, so that a string's header
// is never taken for a longer one. TestLenAtReadsHeaders holds it.
func lenAt(p unsafe.Pointer) int { return *(*int)(unsafe.Add(p, unsafe.Sizeof(uintptr(0)))) }

// intAt reads the signed integer of size bytes at p.
func intAt(p unsafe.Pointer, size uintptr) int64 {
	switch size {
	case 1:
		return int64(*(*int8)(p))
	case 2:
		return int64(*(*int16)(p))
	case 4:
		return int64(*(*int32)(p))
	}
	return *(*int64)(p)
}

// uintAt reads the unsigned integer of size bytes at p.
func uintAt(p unsafe.Pointer, size uintptr) uint64 {
	switch size {
	case 1:
		return uint64(*(*uint8)(p))
	case 2:
		return uint64(*(*uint16)(p))
	case 4:
		return uint64(*(*uint32)(p))
	}
	return *(*uint64)(p)
}

// arrayOf is the type [n]E of a slice descriptor's element E: compiled
// for the powers of two up to 16, reflect's (cached) otherwise.
func (c *codec) arrayOf(n int) reflect.Type {
	if i := bits.TrailingZeros(uint(n)); n&(n-1) == 0 && i < len(c.arrays) {
		return c.arrays[i]
	}
	return reflect.ArrayOf(n, c.typ.Elem())
}
