package journalcodec

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/bits"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/kindgi/agents/bindings"
)

// TestDescriptorOffsetsMatchReflect holds every descriptor the codec
// compiles for the journal's types to reflection: each field's offset,
// name and descriptor type are the struct field's, a slice's element size
// is its element's, and every nested descriptor is its type's (the
// invariant the unsafe reads and writes rest on: see the package doc).
func TestDescriptorOffsetsMatchReflect(t *testing.T) {
	seen := map[*codec]bool{}
	var check func(c *codec)
	check = func(c *codec) {
		if seen[c] {
			return
		}
		seen[c] = true
		switch c.kind {
		case kStruct:
			if c.typ.Kind() != reflect.Struct {
				t.Fatalf("%v: a struct descriptor", c.typ)
			}
			for _, f := range c.fields {
				sf, ok := fieldWithName(c.typ, f.name)
				if !ok || sf.Offset != f.off || sf.Type != f.c.typ {
					t.Errorf("%v.%s: offset %d, type %v; reflect: %v, %v, %v", c.typ, f.name, f.off, f.c.typ, sf.Offset, sf.Type, ok)
				}
				if f.kind != f.c.kind {
					t.Errorf("%v.%s: kind %d, its descriptor's %d", c.typ, f.name, f.kind, f.c.kind)
				}
				if (f.skip == skipNever) != (!f.omitEmpty && !f.omitZero) || (f.skip == skipLen && f.kind != kString || f.skip == skipNil) && !f.omitEmpty ||
					f.skip == skipZero8 && (f.c.size != 8 || f.kind != kInt && f.kind != kInt64 && f.kind != kUint) {
					t.Errorf("%v.%s: skip %d for omitempty %v, omitzero %v", c.typ, f.name, f.skip, f.omitEmpty, f.omitZero)
				}
				if f.commaLen > 0 {
					var w [commaRoom]byte
					putComma(w[:], &f)
					if string(w[:f.commaLen]) != f.comma || f.commaLen != len(f.comma) || strings.Trim(string(w[f.commaLen:]), "\x00") != "" {
						t.Errorf("%v.%s: comma words write %q, want %q", c.typ, f.name, w, f.comma)
					}
				} else if len(f.comma) <= commaRoom {
					t.Errorf("%v.%s: comma %q not in words", c.typ, f.name, f.comma)
				}
				if f.keyLen > 0 {
					doc := f.key + strings.Repeat("\x00", commaRoom)
					var k [3]uint64
					for i := range k {
						k[i] = loadString8(doc, 8*i) & f.keyMasks[i]
					}
					if k != f.keyWords || f.keyLen != len(f.key) {
						t.Errorf("%v.%s: key words %x, want %q", c.typ, f.name, f.keyWords, f.key)
					}
				} else if len(f.key) <= commaRoom {
					t.Errorf("%v.%s: key %q not in words", c.typ, f.name, f.key)
				}
				check(f.c)
			}
		case kSlice:
			if c.typ.Kind() != reflect.Slice || c.elem.typ != c.typ.Elem() || c.size != c.typ.Elem().Size() {
				t.Errorf("%v: element %v of size %d", c.typ, c.elem.typ, c.size)
			}
			check(c.elem)
		case kPtr, kMap:
			if c.elem.typ != c.typ.Elem() {
				t.Errorf("%v: element %v", c.typ, c.elem.typ)
			}
			check(c.elem)
		}
		if c.size != c.typ.Size() && c.kind != kSlice {
			t.Errorf("%v: size %d, reflect %d", c.typ, c.size, c.typ.Size())
		}
	}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[bindings.ConversationMessage](), reflect.TypeFor[bindings.GenerateResponse](),
		reflect.TypeFor[[]bindings.ToolDescriptor](), reflect.TypeFor[bindings.ApprovalRequest](),
		reflect.TypeFor[*bindings.ProvenanceRecord](), reflect.TypeFor[bindings.HitlSpec](),
	} {
		check(descriptorFor(typ))
	}
	if len(seen) < 20 {
		t.Errorf("checked %d descriptors, want the journal's many", len(seen))
	}
}

// fieldWithName is t's exported field whose JSON name is name.
func fieldWithName(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if n == "" {
			n = f.Name
		}
		if f.IsExported() && n == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// TestSharedDecodeSharesBytes: with shared set, a decoded string is the
// document's own bytes (no copy); without it, a copy that writing over
// the document does not change.
func TestSharedDecodeSharesBytes(t *testing.T) {
	doc := []byte(`{"tenantId":"acme","content":"hello"}`)
	var shared, copied bindings.ConversationMessage
	if !Decode(doc, &shared, true) || !Decode(doc, &copied, false) {
		t.Fatal("Decode declined a plain message")
	}
	in := func(s string) bool {
		p := addr(unsafe.StringData(s))
		return p >= addr(&doc[0]) && p <= addr(&doc[len(doc)-1])
	}
	if !in(shared.TenantID) || !in(shared.Content) {
		t.Error("a shared decode copied its strings")
	}
	if in(copied.TenantID) || in(copied.Content) {
		t.Error("a decode that is not shared returned strings sharing the document")
	}
	copy(doc, make([]byte, len(doc)))
	if copied.TenantID != "acme" || copied.Content != "hello" {
		t.Errorf("writing over the document changed a copied decode: %q %q", copied.TenantID, copied.Content)
	}
}

func addr(p *byte) uintptr { return uintptr(unsafe.Pointer(p)) }

// TestUTCTimeIsUnmarshalJSON holds utcTime to time.Time's UnmarshalJSON
// for the forms it reads and the ones it leaves to it.
func TestUTCTimeIsUnmarshalJSON(t *testing.T) {
	for _, s := range []string{
		"2026-03-14T09:00:00Z", "2026-03-14T09:00:00.123456789Z", "2026-03-14T09:00:00.5Z", "0000-01-01T00:00:00Z",
		"9999-12-28T23:59:59.000000001Z", "2024-02-29T12:00:00Z", "2026-02-30T00:00:00Z", "2026-13-01T00:00:00Z",
		"2026-03-14T24:00:00Z", "2026-03-14T09:60:00Z", "2026-03-14T09:00:60Z", "2026-03-14T09:00:00.Z",
		"2026-03-14T09:00:00.1234567890Z", "2026-03-14T09:00:00+01:00", "2026-03-14 09:00:00Z", "2026-3-14T09:00:00Z",
		"+026-03-14T09:00:00Z", "2026-03-14T09:00:00.12a4Z",
	} {
		got, ok := utcTime(s)
		var want time.Time
		err := want.UnmarshalJSON([]byte(`"` + s + `"`))
		if ok && (err != nil || !reflect.DeepEqual(got, want)) {
			t.Errorf("utcTime(%q) = %v; UnmarshalJSON: %v, %v", s, got, want, err)
		}
	}
	// Every day of the years its eras split differently, and times
	// anywhere in 0000–9999, as AppendFormat writes them.
	var times []time.Time
	for _, y := range []int{0, 1, 3, 4, 99, 100, 399, 400, 401, 1600, 1899, 1900, 1969, 1970, 2000, 2024, 2026, 2100, 9999} {
		for d := time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC); d.Year() == y; d = d.AddDate(0, 0, 1) {
			times = append(times, d, d.Add(23*time.Hour+59*time.Minute+59*time.Second+999999999))
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		times = append(times, time.Unix(rng.Int64N(253402300800+62167219200)-62167219200, rng.Int64N(1e9)).UTC())
	}
	for _, at := range times {
		s := at.Format(time.RFC3339Nano)
		got, ok := utcTime(s)
		var want time.Time
		err := want.UnmarshalJSON([]byte(`"` + s + `"`))
		if ok && (err != nil || !reflect.DeepEqual(got, want)) {
			t.Fatalf("utcTime(%q) = %v; UnmarshalJSON: %v, %v", s, got, want, err)
		}
		if !ok && at.Day() <= 28 {
			t.Fatalf("utcTime(%q) declined", s)
		}
	}
	for _, s := range []string{"2026-03-14T09:00:00Z", "2026-03-14T09:00:00.123456789Z"} {
		if _, ok := utcTime(s); !ok {
			t.Errorf("utcTime(%q) leaves the encoder's form to UnmarshalJSON", s)
		}
	}
}

// TestRawValuesAreCopies: the raw values a decoder returns (schemas,
// arguments) are copies, whether the document is read in place (a shared
// journal read's bytes) or not: none shares memory with the document, each
// is capped at its length, so that appending to one never writes over the
// next, and writing over one changes neither the document nor another.
func TestRawValuesAreCopies(t *testing.T) {
	raw := []byte(`[{"id":"a","toolId":"t","arguments":{"q":1}},{"id":"b","toolId":"t","arguments":[2]},{"id":"c","toolId":"t","arguments":"x"}]`)
	want := []string{`{"q":1}`, `[2]`, `"x"`}
	for _, shared := range []bool{false, true} {
		doc := append([]byte(nil), raw...)
		var plans []struct {
			ID        string          `json:"id"`
			ToolID    string          `json:"toolId"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if !Decode(doc, &plans, shared) || len(plans) != 3 {
			t.Fatalf("shared %v: the decoder did not read %s (%d plans)", shared, doc, len(plans))
		}
		lo, hi := &doc[0], &doc[len(doc)-1]
		for i, p := range plans {
			a := p.Arguments
			if string(a) != want[i] || cap(a) != len(a) {
				t.Errorf("shared %v: arguments %d = %q (cap %d), want %q capped", shared, i, a, cap(a), want[i])
			}
			if first, last := &a[0], &a[len(a)-1]; !(addr(last) < addr(lo) || addr(first) > addr(hi)) {
				t.Errorf("shared %v: arguments %d share the document's memory", shared, i)
			}
		}
		_ = append(plans[0].Arguments, "zzzz"...)
		_ = append(plans[1].Arguments, "zzzz"...)
		for i := range plans {
			for j := range plans[i].Arguments {
				plans[i].Arguments[j] = 'X'
			}
			if i+1 < len(plans) && string(plans[i+1].Arguments) != want[i+1] {
				t.Errorf("shared %v: writing over arguments %d changed the next: %q", shared, i, plans[i+1].Arguments)
			}
		}
		if string(doc) != string(raw) {
			t.Errorf("shared %v: writing over the raw values changed the document: %s", shared, doc)
		}
	}
}

// TestNotPlain8: the word test of str finds the first byte that is not
// strPlain, whatever byte it is and wherever it is in the word, whatever
// follows it — and none in a word of plain bytes.
func TestNotPlain8(t *testing.T) {
	first := func(w [8]byte) int {
		for i, c := range w {
			if !strPlain[c] {
				return i
			}
		}
		return 8
	}
	check := func(w [8]byte) {
		m := notPlain8(binary.LittleEndian.Uint64(w[:]))
		got := 8
		if m != 0 {
			got = bits.TrailingZeros64(m) >> 3
		}
		if want := first(w); got != want {
			t.Fatalf("notPlain8(%q) finds byte %d, want %d", w, got, want)
		}
	}
	eachWord([]byte{'a', 0, '"', '\\', 0xff, 0x1f, 0x80, 0x7f}, 1, check)
}

// eachWord hands check every word of 'a's with one byte set to each value
// at each place and the bytes after it set to each of after, then words
// of all after but the one byte, then random words (mostly printable
// ASCII) from seed.
func eachWord(after []byte, seed uint64, check func(w [8]byte)) {
	for c := range 256 {
		for p := range 8 {
			for _, a := range after {
				w := [8]byte{'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a'}
				w[p] = byte(c)
				for k := p + 1; k < 8; k++ {
					w[k] = a
				}
				check(w)
				w = [8]byte{a, a, a, a, a, a, a, a}
				w[p] = byte(c)
				check(w)
			}
		}
	}
	rng := rand.New(rand.NewPCG(seed, seed+1))
	for range 200_000 {
		var w [8]byte
		for k := range w {
			w[k] = byte(rng.IntN(256))
			if rng.IntN(4) > 0 {
				w[k] = byte(0x20 + rng.IntN(0x60))
			}
		}
		check(w)
	}
}

// TestEscape8: the encoder's word test is not zero exactly when one of the
// eight bytes is not jsonPlain, whatever byte it is, wherever it is in
// the word and whatever surrounds it.
func TestEscape8(t *testing.T) {
	check := func(w [8]byte) {
		want := false
		for _, c := range w {
			want = want || jsonPlain[c] == 0
		}
		if got := escape8(binary.LittleEndian.Uint64(w[:])) != 0; got != want {
			t.Fatalf("escape8(%q) = %v, want %v", w, got, want)
		}
		first := 8
		for i, c := range w {
			if jsonPlain[c] == 0 {
				first = i
				break
			}
		}
		if m := escape8(binary.LittleEndian.Uint64(w[:])); m != 0 && bits.TrailingZeros64(m)>>3 != first {
			t.Fatalf("escape8(%q) finds byte %d, want %d", w, bits.TrailingZeros64(m)>>3, first)
		}
		if got, want := loadString8(string(w[:]), 0), binary.LittleEndian.Uint64(w[:]); got != want {
			t.Fatalf("loadString8(%q) = %#x, want %#x", w, got, want)
		}
	}
	eachWord([]byte{'a', 0, ' ', '"', '\\', '<', '>', '&', 0xff, 0x1f, 0x80, 0x7f, 0x3d, 0x27}, 3, check)
}

// TestPutPlain: putPlain is true exactly when every byte is jsonPlain,
// and then has copied them all and written nothing past them, for every
// length its word tests split differently and a byte anywhere.
func TestPutPlain(t *testing.T) {
	for n := range 20 {
		for p := range n {
			for c := range 256 {
				b := []byte(strings.Repeat("a", n))
				b[p] = byte(c)
				if got, want := putPlain(make([]byte, n), string(b)), jsonPlain[c] != 0; got != want {
					t.Fatalf("putPlain(%q) = %v, want %v", b, got, want)
				}
			}
		}
		s := strings.Repeat("abcdefghijklmnopqrstuvwxyz", 1)[:min(n, 26)] + strings.Repeat("z", max(0, n-26))
		dst := []byte(strings.Repeat("#", n+9))
		if !putPlain(dst, s) || string(dst[:n]) != s || string(dst[n:]) != "#########" {
			t.Fatalf("putPlain(%q) wrote %q", s, dst)
		}
	}
}

// TestTypeIDIsTheTypePointer: typeID reads the pointer reflect itself
// reports for a type, and the published table finds every descriptor by
// it (and no other).
func TestTypeIDIsTheTypePointer(t *testing.T) {
	types := []reflect.Type{
		reflect.TypeFor[string](), reflect.TypeFor[int](), reflect.TypeFor[[]string](),
		reflect.TypeFor[*int](), reflect.TypeFor[struct{ A string }](), reflect.TypeFor[any](),
		reflect.TypeFor[json.RawMessage](), reflect.TypeFor[map[string]int](),
	}
	for _, typ := range types {
		if got, want := typeID(typ), reflect.ValueOf(typ).UnsafePointer(); got != want {
			t.Fatalf("typeID(%v) = %p, want %p", typ, got, want)
		}
		c := descriptorFor(typ)
		if c.typ != typ {
			t.Fatalf("descriptorFor(%v) is %v's", typ, c.typ)
		}
	}
	tab := descriptors.Load()
	for id, c := range tab.all {
		if got := tab.find(id); got != c {
			t.Fatalf("table finds %p for %v, want %p", got, c.typ, c)
		}
	}
	if got := tab.find(typeID(reflect.TypeFor[struct{ NeverCompiled int }]())); got != nil {
		t.Fatalf("table finds %v for a type never compiled", got.typ)
	}
}

// TestAppendInt: appendInt writes what strconv.AppendInt writes, on both
// sides of its short forms and at the ends of int64.
func TestAppendInt(t *testing.T) {
	for _, v := range []int64{0, 1, 9, 10, 11, 42, 99, 100, 101, 999, -1, -9, -10, -99, -100, 1 << 40, math.MaxInt64, math.MinInt64} {
		if got, want := string(appendInt([]byte("x"), v)), "x"+strconv.FormatInt(v, 10); got != want {
			t.Fatalf("appendInt(%d) = %q, want %q", v, got, want)
		}
	}
}

// needsCompactByBytes is NeedsCompact one byte at a time: the reference
// its word skipping is held to.
func needsCompactByBytes(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xE2:
			return true
		case '"':
			for i++; i < len(raw); i++ {
				c := raw[i]
				if c == '"' {
					break
				}
				if c == '\\' {
					i++
				} else if c == '<' || c == '>' || c == '&' || c == 0xE2 {
					return true
				}
			}
		}
	}
	return false
}

// TestNeedsCompactAsByBytes: NeedsCompact answers as the byte-at-a-time
// scan does for documents with any byte at any place of a string and
// around it: strings of every length that its words split differently,
// escapes across a word's end, unterminated strings.
func TestNeedsCompactAsByBytes(t *testing.T) {
	bytesToTry := []byte{'a', ' ', '"', '\\', '<', '>', '&', 0xE2, 0x80, 0x1f, '\n', '{', ':'}
	for n := range 20 {
		for p := range n {
			for _, c := range bytesToTry {
				for _, frame := range [][2]string{{`{"k":"`, `"}`}, {`"`, ``}, {`["`, `", "x"]`}, {`"`, `\"y"`}} {
					body := []byte(strings.Repeat("b", n))
					body[p] = c
					raw := append(append([]byte(frame[0]), body...), frame[1]...)
					if got, want := NeedsCompact(raw), needsCompactByBytes(raw); got != want {
						t.Fatalf("NeedsCompact(%q) = %v, want %v", raw, got, want)
					}
				}
			}
		}
	}
}

// TestLenAtReadsHeaders: lenAt reads the length of a string's header and
// of a slice's, where skipLen reads them.
func TestLenAtReadsHeaders(t *testing.T) {
	s, b := "abcde", make([]byte, 3, 9)
	if got := lenAt(unsafe.Pointer(&s)); got != len(s) {
		t.Errorf("lenAt(string) = %d, want %d", got, len(s))
	}
	if got := lenAt(unsafe.Pointer(&b)); got != len(b) {
		t.Errorf("lenAt(slice) = %d, want %d", got, len(b))
	}
}
