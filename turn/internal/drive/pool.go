package drive

import (
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/alias"
)

// Mem is the part of a pooled drive's memory that its journal uses: the
// first slabs of the journal index (the entries and their key states; the
// journal buffer is the entry slab's tail) and the first output arena.
// The turn's run pool holds one beside each pooled run, and the next drive
// writes over it: nothing a drive hands out points into it (the journal
// entries a store keeps are copies, and the arena is used only when the
// store copies what it keeps: see newOutArena).
type Mem struct {
	keys    [20]KeyState
	entries [20]bindings.JournalEntry
	// arena is the drive's first output arena when its journal is the
	// store's own Driver, which copies what it keeps (see newOutArena),
	// written over by the next drive; arenaTaken is set while a drive uses
	// it.
	arena      []byte
	arenaTaken bool
}

// Release marks the pooled memory free for the next drive: nothing reads
// the outputs in its arena now (the store copied them).
func (m *Mem) Release() { m.arenaTaken = false }

// entrySlabLen is the length of every entry slab: a turn's own entries,
// with one tool call (the pooled run's first slab is one).
const entrySlabLen = len(Mem{}.entries)

// outArenaSize is the size of a drive's output arena: a turn with one
// tool call journals about 3.4 KB of outputs.
const outArenaSize = 4096

// newOutArena returns an empty output arena for EncodeStep: the pooled
// drive's own when the journal is the store's own Driver, which keeps no
// reference to a Commit's input (journal.Driver's Memory), so that drives
// after this one write over it instead of allocating theirs (4 KB a
// turn); a new one otherwise, which the store may keep as it is. Outputs
// written into it are read during the drive only (the journal index, the
// store's calls): what the drive hands out is decoded or copied from them,
// never a slice of them.
func (j *Journal) newOutArena() []byte {
	if m := j.mem; m != nil && !m.arenaTaken && j.native {
		m.arenaTaken = true
		if m.arena == nil {
			m.arena = make([]byte, 0, outArenaSize)
		}
		return m.arena[:0]
	}
	return make([]byte, 0, outArenaSize)
}

// InPlace reports whether e's output may be decoded in place, the strings
// decoded sharing its bytes (UnmarshalIn): e is an entry of the journal
// Open read for this drive, which is the drive's own and which no one
// writes (journal.Driver's Memory), and its output is not in the pooled
// drive's output arena, which later drives write over (newOutArena). An
// entry this drive wrote is decoded from a copy.
func (j *Journal) InPlace(e *bindings.JournalEntry) bool {
	if !alias.Within(e, j.loaded) {
		return false
	}
	if m := j.mem; m != nil && alias.BytesWithin(e.Output, m.arena) {
		return false
	}
	return true
}
