package drive

import "github.com/kindgi/agents/internal/alias"

// KeyState holds the journal entries of one step key, one per phase (see
// Journal.At), and for a model or tool step the number of its attempts
// that ended without a stored result (see Journal.NoteAttempt).
type KeyState struct {
	key string
	// Started, Parked and Result are the key's entries of each phase.
	Started, Parked, Result EntryRef
	// Attempts counts the failed attempts journaled for the key.
	Attempts int
}

// EntryRef names an entry the journal index holds: 0 none, n > 0 the n-th
// entry kept in the drive's entry slabs (record), n < 0 the -n-th of the
// entries read for the drive (Load). A number, not a pointer: the key
// states of a pooled slab are written for every step of every drive, and
// a pointer word written costs a write barrier while a GC mark runs.
type EntryRef int32

// index is a run's key states, by step key: a turn has about 17 keys, so
// they are scanned (newest first: the key a drive looks up is usually one
// it just wrote), with no map to build per run; past indexScan keys (a
// long resumed run) a map indexes them.
//
// Key states are carved from slabs: a pointer to one stays valid when a
// full slab is replaced by a new one (the old slab is kept in full).
type index struct {
	slab  []KeyState
	full  [][]KeyState
	byKey map[string]*KeyState
	n     int
}

// indexScan is the number of keys up to which get scans.
const indexScan = 32

// newIndex returns an index with room for n keys in its first slab.
func newIndex(n int) index {
	return index{slab: make([]KeyState, 0, n)}
}

// get returns the key state of key, or nil.
func (x *index) get(key string) *KeyState {
	if x.byKey != nil {
		return x.byKey[key]
	}
	for i := len(x.slab) - 1; i >= 0; i-- {
		if x.slab[i].key == key {
			return &x.slab[i]
		}
	}
	for _, s := range x.full {
		for i := range s {
			if s[i].key == key {
				return &s[i]
			}
		}
	}
	return nil
}

// add makes the key state of key, which get did not find.
func (x *index) add(key string) *KeyState {
	if len(x.slab) == cap(x.slab) {
		if cap(x.slab) > 0 {
			x.full = append(x.full, x.slab)
		}
		x.slab = make([]KeyState, 0, max(16, cap(x.slab)))
	}
	// Field by field, not as one struct copy, and the key only when the
	// slot does not hold it already (a pooled slab holds the last drive's
	// states, usually of the same keys): while a GC mark runs each pointer
	// word written costs a write barrier, and a struct copy pays the
	// runtime's bulk one (several times the compiler's inline one).
	x.slab = x.slab[:len(x.slab)+1]
	st := &x.slab[len(x.slab)-1]
	if !alias.SameString(st.key, key) {
		st.key = key
	}
	st.Started, st.Parked, st.Result, st.Attempts = 0, 0, 0, 0
	x.n++
	switch {
	case x.byKey != nil:
		x.byKey[key] = st
	case x.n > indexScan:
		x.byKey = make(map[string]*KeyState, 2*x.n)
		for _, s := range append(x.full, x.slab) {
			for i := range s {
				x.byKey[s[i].key] = &s[i]
			}
		}
	}
	return st
}

// len is the number of keys.
func (x *index) len() int { return x.n }
