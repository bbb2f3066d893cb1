package drive

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/alias"
)

// AttemptSep joins a step key and an attempt number into the key of the
// entry recording that attempt's failure: "agent-loop/1/model-call/attempt/2".
// No step key contains it (tool call ids in keys are path-escaped).
const AttemptSep = "/attempt/"

// load indexes a run's entries by key and phase. The first entry of a
// (key, phase) wins, as the binding's idempotency rule says. The index
// points into entries, which are the run's own (read from the store for
// this drive): nothing is copied.
func (j *Journal) load(entries []bindings.JournalEntry) {
	if j.mem != nil && len(entries) <= len(j.mem.keys) {
		// The pooled slab, also for a resumed run's keys: an entry's started
		// and result phases share a key, and the index adds a slab of its
		// own once this one is full.
		j.entries = index{slab: j.mem.keys[:0]}
	} else {
		j.entries = newIndex(len(entries) + 20) // room for a turn's own keys
	}
	if j.mem != nil {
		j.entrySlab = j.mem.entries[:0]
	} else {
		j.entrySlab = nil
	}
	j.loaded = entries
	for i := range entries {
		if p := j.slot(&entries[i]); p != nil {
			*p = EntryRef(-i - 1)
		}
	}
}

// At returns the entry ref names, nil for none.
func (j *Journal) At(ref EntryRef) *bindings.JournalEntry {
	switch {
	case ref > 0:
		i := int(ref) - 1
		if k := i / entrySlabLen; k < len(j.fullSlabs) {
			return &j.fullSlabs[k][i%entrySlabLen]
		}
		return &j.entrySlab[i-len(j.fullSlabs)*entrySlabLen]
	case ref < 0:
		return &j.loaded[-int(ref)-1]
	}
	return nil
}

// slabRef is the ref of the entry slab's i-th entry.
func (j *Journal) slabRef(i int) EntryRef {
	return EntryRef(len(j.fullSlabs)*entrySlabLen + i + 1)
}

// Record indexes one entry, a copy of e. The copies are carved from a slab
// (a pointer into a slab stays valid when a full slab is replaced by a new
// one), one allocation per slab instead of one per entry.
func (j *Journal) Record(e bindings.JournalEntry) {
	if p := j.slot(&e); p != nil {
		*p = j.keep(e)
	}
}

// recordAt indexes the entry at e, as Record does, without copying it
// when e is the entry slab's next free slot (see slabRoom): the slab then
// takes it as it is. Every entry a drive writes lands there first, so an
// entry is copied once on its way to the index (not into a buffer, then the
// slab, then again with its Seq), and each pointer word not copied is a
// write barrier less while a GC mark runs.
func (j *Journal) recordAt(e *bindings.JournalEntry) {
	p := j.slot(e)
	if p == nil {
		return
	}
	if n := len(j.entrySlab); n < cap(j.entrySlab) && e == &j.entrySlab[:n+1][n] {
		j.entrySlab = j.entrySlab[:n+1]
		*p = j.slabRef(n)
		return
	}
	*p = j.keep(*e)
}

// slabRoom returns an empty slice at the entry slab's free room (a new slab
// when this one is full): appending to it writes the slots the slab takes
// next, which is where the buffer and the entries written with it are built
// (see BufferEntry, AppendEntry), so that recordAt finds them in place.
func (j *Journal) slabRoom() []bindings.JournalEntry {
	if len(j.entrySlab) == cap(j.entrySlab) {
		j.newSlab()
	}
	n := len(j.entrySlab)
	return j.entrySlab[n:n]
}

// newSlab replaces the full entry slab by a new one.
func (j *Journal) newSlab() {
	if cap(j.entrySlab) > 0 {
		j.fullSlabs = append(j.fullSlabs, j.entrySlab) // kept whole: refs name its entries
	}
	j.entrySlab = make([]bindings.JournalEntry, 0, entrySlabLen)
}

// bufTail returns the buffer, to append one entry to: at the entry slab's
// free room when it is empty. A buffer that is not empty already ends
// there (every entry buffered is kept in the slab at once, and nothing else
// is kept while the buffer holds entries) or is an array of its own, after
// a full slab was replaced (then its entries are copied, as before).
func (j *Journal) bufTail() []bindings.JournalEntry {
	if len(j.buf) == 0 {
		return j.slabRoom()
	}
	return j.buf
}

// bufSlot returns the buffer with one slot more (see bufTail), and that
// slot, which holds an earlier entry (the pooled slab's last drive's) or a
// zero one: the caller writes it with setEntry (BufferEntry then makes
// the longer buffer j.buf).
func (j *Journal) bufSlot() ([]bindings.JournalEntry, *bindings.JournalEntry) {
	b := j.bufTail()
	n := len(b)
	if n == cap(b) {
		b = append(b, bindings.JournalEntry{})
	}
	b = b[:n+1]
	return b, &b[n]
}

// setEntry makes *e the entry of those fields (Seq zero). It writes them
// one by one, skipping the key and the output when *e already holds them
// (the same bytes at the same address: the slot of a pooled slab usually
// holds the same step's entry of the drive before, its key the same
// string and its output at the same place in the reused arena; node and
// status are constants, whose words cost the barrier little).
// While a GC mark runs, every pointer word written costs a write barrier,
// and a JournalEntry copied whole costs the runtime's bulk one, several
// times dearer per word than the compiler's inline barrier of a field.
func setEntry(e *bindings.JournalEntry, key, node string, status bindings.StepStatus, output json.RawMessage, se *bindings.StepError, at time.Time) {
	e.Node, e.Status, e.Error = node, status, se
	setEntryKeyed(e, key, output, at)
}

// setEntryKeyed is setEntry of the Seq (zero), the key, the output and the
// time.
func setEntryKeyed(e *bindings.JournalEntry, key string, output json.RawMessage, at time.Time) {
	e.Seq, e.At = 0, at
	if !alias.SameString(e.Key, key) {
		e.Key = key
	}
	if !alias.SameBytes(e.Output, output) {
		e.Output = output
	}
}

// slot returns where the index keeps e: the phase of e's key state that
// has no entry yet, or nil when it has one already (or when e is a failed
// attempt of a step, which only counts the attempt).
func (j *Journal) slot(e *bindings.JournalEntry) *EntryRef {
	if e.Status == bindings.StepFailed {
		if i := strings.LastIndex(e.Key, AttemptSep); i >= 0 {
			if n, err := strconv.Atoi(e.Key[i+len(AttemptSep):]); err == nil {
				// A failed attempt of step e.Key[:i] (NoteAttempt).
				st := j.state(e.Key[:i])
				st.Attempts = max(st.Attempts, n)
				return nil
			}
		}
	}
	st := j.state(e.Key)
	p := &st.Result
	switch e.Status.Phase() {
	case string(bindings.StepStarted):
		p = &st.Started
	case string(bindings.StepParked):
		p = &st.Parked
	}
	if *p != 0 {
		return nil
	}
	return p
}

// state returns the key state of key, made on first use.
func (j *Journal) state(key string) *KeyState {
	st := j.entries.get(key)
	if st == nil {
		st = j.entries.add(key)
	}
	return st
}

// keep stores e in the entry slab and returns its ref.
func (j *Journal) keep(e bindings.JournalEntry) EntryRef {
	j.slabRoom()
	j.entrySlab = append(j.entrySlab, e)
	return j.slabRef(len(j.entrySlab) - 1)
}
