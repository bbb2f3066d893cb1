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

import "unsafe"

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

// in reports whether p is in the n bytes from base.
func in(p, base unsafe.Pointer, n uintptr) bool {
	return uintptr(p) >= uintptr(base) && uintptr(p)-uintptr(base) < n
}
