package alias

import (
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// TestSameStringIsIdentity: equal bytes elsewhere are not the same
// string; a string is itself, and so is its copy as a value.
func TestSameStringIsIdentity(t *testing.T) {
	a := strings.Repeat("ab", 8)
	b := strings.Clone(a)
	if !SameString(a, a) || !SameString("", "") {
		t.Error("a string is not the same as itself")
	}
	if SameString(a, b) {
		t.Error("a copy with equal bytes is taken for the same string")
	}
	if SameString(a, a[:len(a)-1]) || SameString(a, a[1:]) {
		t.Error("a substring is taken for the string")
	}
}

// TestSameBytesIsIdentity: a slice is itself; a copy, a shorter or a
// capped slice of the same array is not.
func TestSameBytesIsIdentity(t *testing.T) {
	a := make([]byte, 4, 8)
	if !SameBytes(a, a) || !SameBytes(nil, nil) {
		t.Error("a slice is not the same as itself")
	}
	if SameBytes(a, append([]byte(nil), a...)) || SameBytes(a, a[:3]) || SameBytes(a, a[:4:4]) || SameBytes(a, a[1:]) {
		t.Error("another slice is taken for the same")
	}
}

// TestWithin: each element of a slice is within it, the element past its
// end and another array's are not; likewise for bytes within an arena's
// capacity.
func TestWithin(t *testing.T) {
	s := make([]int64, 3, 5)
	for i := range s {
		if !Within(&s[i], s) {
			t.Errorf("element %d is not within its slice", i)
		}
	}
	full := s[:5]
	if Within(&full[3], s) || Within(new(int64), s) || Within(&s[0], nil) || Within[int64](nil, s) {
		t.Error("a pointer outside the slice is taken as within it")
	}
	arena := make([]byte, 0, 16)
	arena = append(arena, "0123456789"...)
	if !BytesWithin(arena[2:4], arena) || !BytesWithin(arena[15:16], arena[:0]) {
		t.Error("bytes of the arena are not within it")
	}
	if BytesWithin([]byte("x"), arena) || BytesWithin(nil, arena) || BytesWithin(arena[:1], nil) {
		t.Error("bytes elsewhere are taken as within the arena")
	}
}

func TestStringWithinAndAt(t *testing.T) {
	arena := []byte("hello, world")
	view := string(arena) // a copy: not within
	if StringWithin(view, arena) || StringAt(view, &arena[0]) {
		t.Error("a copy of the arena's bytes is reported as a view of them")
	}
	in := unsafeView(arena[7:12])
	if !StringWithin(in, arena) || !StringAt(in, &arena[7]) || StringAt(in, &arena[6]) {
		t.Error("a view of the arena's bytes is not reported as one")
	}
	if StringWithin(in, arena[:8]) {
		t.Error("a view running past the arena's end is reported within it")
	}
	if StringWithin("", arena) || StringAt("", &arena[0]) {
		t.Error("the empty string is reported within the arena")
	}
}

func TestSettableWritesAnUnexportedField(t *testing.T) {
	var v struct{ hidden int }
	f := reflect.ValueOf(&v).Elem().Field(0)
	if f.CanSet() {
		t.Fatal("an unexported field is settable without Settable")
	}
	Settable(f).SetInt(7)
	if v.hidden != 7 {
		t.Errorf("hidden = %d, want 7", v.hidden)
	}
}

// unsafeView is a string sharing b's bytes.
func unsafeView(b []byte) string { return unsafe.String(&b[0], len(b)) }
