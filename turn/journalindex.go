package turn

// journalIndex is a run's key states, by step key: a turn has about 17
// keys, so they are scanned (newest first: the key a drive looks up is
// usually one it just wrote), with no map to build per run; past
// indexScan keys (a long resumed run) a map indexes them.
//
// Key states are carved from slabs: a pointer to one stays valid when a
// full slab is replaced by a new one (the old slab is kept in full).
type journalIndex struct {
	slab  []keyState
	full  [][]keyState
	byKey map[string]*keyState
	n     int
}

// indexScan is the number of keys up to which get scans.
const indexScan = 32

// newJournalIndex returns an index with room for n keys in its first slab.
func newJournalIndex(n int) journalIndex {
	return journalIndex{slab: make([]keyState, 0, n)}
}

// get returns the key state of key, or nil.
func (x *journalIndex) get(key string) *keyState {
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
func (x *journalIndex) add(key string) *keyState {
	if len(x.slab) == cap(x.slab) {
		if cap(x.slab) > 0 {
			x.full = append(x.full, x.slab)
		}
		x.slab = make([]keyState, 0, max(16, cap(x.slab)))
	}
	// Field by field, not as one struct copy, and the key only when the
	// slot does not hold it already (a pooled slab holds the last drive's
	// states, usually of the same keys): while a GC mark runs each pointer
	// word written costs a write barrier, and a struct copy pays the
	// runtime's bulk one (several times the compiler's inline one).
	x.slab = x.slab[:len(x.slab)+1]
	st := &x.slab[len(x.slab)-1]
	if !sameString(st.key, key) {
		st.key = key
	}
	st.started, st.parked, st.result, st.attempts = 0, 0, 0, 0
	x.n++
	switch {
	case x.byKey != nil:
		x.byKey[key] = st
	case x.n > indexScan:
		x.byKey = make(map[string]*keyState, 2*x.n)
		for _, s := range append(x.full, x.slab) {
			for i := range s {
				x.byKey[s[i].key] = &s[i]
			}
		}
	}
	return st
}

// len is the number of keys.
func (x *journalIndex) len() int { return x.n }
