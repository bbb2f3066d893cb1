// Package frozen makes strings that share the bytes of a store's
// append-only text instead of copying them.
//
// memstore keeps its records (messages, journal entries, snapshots) in
// chunks of text it appends to and never writes again, and hands out
// strings that point into them: a read costs no copy, and a record's ids
// live inside the record, which the garbage collector scans cheaply.
//
// The invariant every caller keeps: bytes passed to String are never
// written again, by anyone, for as long as the process runs — the buffer
// is only ever appended to past them (a new chunk when it is full, never
// a reallocation that reuses them), and it is never handed to code that
// might write it. Go strings are immutable; a string whose bytes change
// breaks every map, comparison and copy that holds it.
// memstore's TestReadValuesSurviveLaterWrites would catch a breach: it
// keeps what reads returned, writes much more, and checks that every
// value kept is unchanged.
package frozen

import "unsafe"

// String returns b as a string that shares b's bytes. b must never be
// written again (see the package doc). An empty b gives "".
func String(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
