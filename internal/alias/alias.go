// Package alias answers whether two values share memory: the same string
// or byte slice at the same address, or a pointer into a slice's backing
// array. The turn uses it to skip writes that would change nothing (each
// pointer word written into a pooled run costs a write barrier while a GC
// mark runs) and to tell a journal entry it read from one it wrote.
//
// The invariant every function keeps: it only compares addresses, never
// dereferences one it computed, and the caller holds every value it
// passes (so none of the memory compared can be freed and reused during
// the call). Comparing addresses of live values is always sound; what the
// answer means (for instance, that bytes at the same address are the same
// bytes) holds only as long as no one writes them, which is the caller's
// to keep. TestSameStringIsIdentity, TestSameBytesIsIdentity and
// TestWithin would catch an answer that looks at contents or misses a
// boundary.
package alias

import (
	"reflect"
	"unsafe"
)

// SameString reports whether a and b are the same string: the same length
// at the same address (not only equal bytes).
func SameString(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// SameBytes reports whether a and b are the same slice: the same backing
// array, length and capacity.
func SameBytes(a, b []byte) bool {
	return len(a) == len(b) && cap(a) == cap(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}

// Within reports whether p points to an element of s (from s[0] to
// s[len(s)-1]).
func Within[E any](p *E, s []E) bool {
	if p == nil || len(s) == 0 {
		return false
	}
	return in(unsafe.Pointer(p), unsafe.Pointer(unsafe.SliceData(s)), uintptr(len(s))*unsafe.Sizeof(*p))
}

// BytesWithin reports whether b's first byte is in the backing array of
// arena (from arena[0] to arena[cap(arena)-1]).
func BytesWithin(b, arena []byte) bool {
	if len(b) == 0 || cap(arena) == 0 {
		return false
	}
	return in(unsafe.Pointer(unsafe.SliceData(b)), unsafe.Pointer(unsafe.SliceData(arena)), uintptr(cap(arena)))
}

// StringWithin reports whether every byte of s is in arena (from arena[0]
// to arena[len(arena)-1]): s is a view of arena's bytes, not a copy.
func StringWithin(s string, arena []byte) bool {
	if len(s) == 0 || len(arena) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.SliceData(arena)))
	return p >= lo && p+uintptr(len(s)) <= lo+uintptr(len(arena))
}

// StringAt reports whether s's first byte is the byte p points to.
func StringAt(s string, p *byte) bool {
	return len(s) > 0 && p != nil && unsafe.StringData(s) == p
}

// Settable returns v, a field reached through reflection (perhaps
// unexported, so not settable), as a settable value at the same address:
// for tests that fill every field of a struct, exported or not. v must be
// addressable (a field of a value reached through a pointer).
func Settable(v reflect.Value) reflect.Value {
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}

// in reports whether p is in the n bytes from base.
func in(p, base unsafe.Pointer, n uintptr) bool {
	return uintptr(p) >= uintptr(base) && uintptr(p)-uintptr(base) < n
}
