package memstore

import (
	"encoding/binary"
	"encoding/json"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/frozen"
)

// journal is a run's entries in a form the garbage collector marks
// cheaply. A Store keeps every run it ever journaled, and each GC cycle
// marks all of them again: a bindings.JournalEntry holds six pointers (key,
// node, status, output, error, the time's location), a stored record none.
// The key, node and output of every entry are copied into text, the
// status is a code, the time an int64 of nanoseconds; a bindings
// JournalEntry is built again when one is read (entry).
type journal struct {
	recs []entryRec
	// text holds each entry's key, node and output back to back, in chunks
	// (the last one partly filled): bytes once written never change, and
	// no chunk is ever copied, so the strings read back alias them (str)
	// instead of copying, and a long journal appends in O(1).
	text [][]byte
	// errs are the entries' errors (rare), entryRec.err-1 indexing them.
	errs []bindings.StepError
	// odd holds what a record does not: a time that int64 nanoseconds do
	// not give back exactly (a location, a monotonic reading, the zero
	// time) and a status without a code, by entry index.
	odd map[int]oddFields
	// phases maps key and phase to the entry once the journal is longer
	// than scanLimit (a shorter one, a turn's, is scanned instead: no map
	// to build per run).
	phases map[stepPhase]int
	// seen has bit h%128 set for the hash h of every entry's key and phase:
	// an entry whose bit is clear is new without a scan.
	seen [2]uint64
}

// entryRec is one stored entry (see journal).
type entryRec struct {
	at     int64  // At in Unix nanoseconds, UTC (see oddFields)
	chunk  uint32 // the text chunk of the key, node and output, one after the other
	keyOff uint32 // where the key starts in it
	keyLen uint32
	node   uint32 // the node's length
	outLen uint32 // the output's length
	hash   uint32 // of key and phase (keyHash)
	err    uint32 // 1 + the error's index in journal.errs; 0: none
	status uint8  // statusCode
}

// oddFields is what an entryRec does not hold for an unusual entry.
type oddFields struct {
	at     time.Time
	hasAt  bool
	status bindings.StepStatus
}

// Status codes of entryRec.status; 0 is a status without one (in odd).
const (
	codeStarted uint8 = iota + 1
	codeCompleted
	codeFailed
	codeParked
)

func statusCode(st bindings.StepStatus) uint8 {
	switch st {
	case bindings.StepStarted:
		return codeStarted
	case bindings.StepCompleted:
		return codeCompleted
	case bindings.StepFailed:
		return codeFailed
	case bindings.StepParked:
		return codeParked
	}
	return 0
}

var codeStatus = [...]bindings.StepStatus{"", bindings.StepStarted, bindings.StepCompleted, bindings.StepFailed, bindings.StepParked}

// phaseCode is the journal phase of a status code: completed and failed
// are one phase (the step's result); 0 is a status without a code.
var phaseCode = [...]uint8{0, 1, 2, 2, 3}

// keyHash hashes a key with its phase (a phase code, or the status's
// phase text for a status without one). It is cheap rather than strong:
// the length and two eight-byte words of the key (the words where a
// turn's keys differ: "agent-loop/1/…" and "agent-loop/2/…" at byte 11,
// and the tail); a collision only costs a comparison of the keys.
func keyHash(key string, st bindings.StepStatus, code uint8) uint32 {
	h := uint64(len(key)) * 0x9E3779B97F4A7C15
	if n := len(key); n >= 8 {
		h ^= binary.LittleEndian.Uint64([]byte(key[n-8:])) * 0xC2B2AE3D27D4EB4F
		h ^= binary.LittleEndian.Uint64([]byte(key[min(8, n-8):])) * 0x165667B19E3779F9
	} else {
		for i := 0; i < n; i++ {
			h = (h ^ uint64(key[i])) * 0x100000001B3
		}
	}
	p := uint64(phaseCode[code])
	if code == 0 {
		for _, c := range []byte(st.Phase()) {
			p = (p ^ uint64(c)) * 0x100000001B3
		}
	}
	h = (h ^ p) * 0x9E3779B97F4A7C15
	return uint32(h ^ h>>32)
}

// str is text[chunk][off:off+n] as a string, aliasing the bytes (never
// written again once appended).
func (j *journal) str(chunk, off, n uint32) string {
	return frozen.String(j.text[chunk][off : off+n])
}

func (j *journal) len() int { return len(j.recs) }

func (j *journal) key(rec *entryRec) string { return j.str(rec.chunk, rec.keyOff, rec.keyLen) }

func (j *journal) status(i int) bindings.StepStatus {
	if c := j.recs[i].status; c != 0 {
		return codeStatus[c]
	}
	return j.odd[i].status
}

// find returns the index of the entry of key whose status is of st's
// phase; when there is none, its slot is what add needs to store it.
func (j *journal) find(key string, st bindings.StepStatus) (int, slot, bool) {
	code := statusCode(st)
	sl := slot{code: code, hash: keyHash(key, st, code)}
	if j.phases != nil {
		i, ok := j.phases[phaseKey(key, st)]
		return i, sl, ok
	}
	i, ok := j.scan(key, st, code, sl.hash)
	return i, sl, ok
}

// slot is what find computed of an entry for add.
type slot struct {
	code uint8
	hash uint32
}

// scan is find by a scan of the records.
func (j *journal) scan(key string, st bindings.StepStatus, code uint8, h uint32) (int, bool) {
	if j.seen[h>>6&1]&(1<<(h&63)) == 0 {
		return 0, false
	}
	for i := range j.recs {
		rec := &j.recs[i]
		if rec.hash != h || rec.keyLen != uint32(len(key)) || j.key(rec) != key {
			continue
		}
		if c := rec.status; c != 0 && code != 0 {
			if phaseCode[c] == phaseCode[code] {
				return i, true
			}
		} else if j.status(i).Phase() == st.Phase() {
			return i, true
		}
	}
	return 0, false
}

// journalChunk is the size of a journal's second text chunk (the first
// is a runRec's own); each later one doubles it, up to 64 KB, and a larger
// entry gets a chunk of its size.
const journalChunk = 4096

// add stores e, which find did not find (giving sl), as the next entry,
// and returns its index. The stored entry keeps copies of e's key, node
// and output, and of e.Error as a store holds it.
func (j *journal) add(e *bindings.JournalEntry, sl slot) int {
	code, h := sl.code, sl.hash
	i := len(j.recs)
	need := len(e.Key) + len(e.Node) + len(e.Output)
	t := len(j.text) - 1
	if t < 0 || cap(j.text[t])-len(j.text[t]) < need {
		size := journalChunk << min(max(t, 0), 4)
		j.text = append(j.text, make([]byte, 0, max(size, need)))
		t++
	}
	rec := entryRec{chunk: uint32(t), keyOff: uint32(len(j.text[t])), keyLen: uint32(len(e.Key)), node: uint32(len(e.Node)), outLen: uint32(len(e.Output)), hash: h, status: code}
	j.text[t] = append(append(append(j.text[t], e.Key...), e.Node...), e.Output...)
	if e.Error != nil {
		j.errs = append(j.errs, *storedStepError(e.Error))
		rec.err = uint32(len(j.errs))
	}
	var odd oddFields
	if ns, ok := exactNanos(e.At); ok {
		rec.at = ns
	} else {
		odd.at, odd.hasAt = e.At, true
	}
	if code == 0 {
		odd.status = e.Status
	}
	if odd.hasAt || code == 0 {
		if j.odd == nil {
			j.odd = map[int]oddFields{}
		}
		j.odd[i] = odd
	}
	if len(j.recs) == cap(j.recs) {
		// Past the record's own slab (runSlab, 20: a fresh turn's), room
		// for 32 — a parked turn resumed writes 23 — which fills its size
		// class to the byte (append would double to 40, 1,600 bytes in a
		// 1,792-byte class); doubling after that.
		n := 32
		if cap(j.recs) >= n {
			n = 2 * cap(j.recs)
		}
		recs := make([]entryRec, len(j.recs), n)
		copy(recs, j.recs)
		j.recs = recs
	}
	j.recs = append(j.recs, rec)
	j.seen[h>>6&1] |= 1 << (h & 63)
	switch {
	case j.phases != nil:
		j.phases[phaseKey(e.Key, e.Status)] = i
	case len(j.recs) > scanLimit:
		// Entries are unique by key and phase: index them all.
		j.phases = make(map[stepPhase]int, 2*len(j.recs))
		for k := range j.recs {
			j.phases[phaseKey(j.key(&j.recs[k]), j.status(k))] = k
		}
	}
	return i
}

// exactNanos returns t as Unix nanoseconds when time.Unix(0, ns).UTC()
// gives back t itself, == and all (a UTC time without a monotonic
// reading, as a turn writes).
func exactNanos(t time.Time) (int64, bool) {
	ns := t.UnixNano()
	return ns, time.Unix(0, ns).UTC() == t
}

// out returns the i-th entry's output as the store keeps it (nil when it
// has none or an empty one: a copy of either is nil); the caller must not
// write to it.
func (j *journal) out(i int) []byte {
	rec := &j.recs[i]
	if rec.outLen == 0 {
		return nil
	}
	off := rec.keyOff + rec.keyLen + rec.node
	return j.text[rec.chunk][off : off+rec.outLen : off+rec.outLen]
}

// entry returns the i-th entry (Seq i+1) as a JournalEntry with a copy of
// its output.
func (j *journal) entry(i int) bindings.JournalEntry {
	return j.entryWith(i, cloneJSON(j.out(i)))
}

// entryWith is entry(i) with output as its Output (a copy of j.out(i)).
func (j *journal) entryWith(i int, output json.RawMessage) bindings.JournalEntry {
	var e bindings.JournalEntry
	j.fill(&e, i, output)
	return e
}

// fill sets every field of *e to entryWith(i, output)'s.
func (j *journal) fill(e *bindings.JournalEntry, i int, output json.RawMessage) {
	rec := &j.recs[i]
	e.Seq = int64(i + 1)
	e.Key = j.key(rec)
	e.Node = j.str(rec.chunk, rec.keyOff+rec.keyLen, rec.node)
	e.Status = j.status(i)
	e.Output = output
	e.Error = nil
	if rec.err != 0 {
		se := j.errs[rec.err-1]
		e.Error = &se
	}
	if o, ok := j.odd[i]; ok && o.hasAt {
		e.At = o.at
	} else {
		e.At = time.Unix(0, rec.at).UTC()
	}
}

// entries returns copies of all entries, in append order. Their outputs
// are copied into one buffer (one allocation for the read, not one per
// entry), each capped at its own length so that appending to one never
// writes over the next.
func (j *journal) entries() []bindings.JournalEntry {
	out := make([]bindings.JournalEntry, len(j.recs))
	n := 0
	for i := range out {
		n += len(j.out(i))
	}
	buf := make([]byte, 0, n)
	for i := range out {
		o := j.out(i)
		if len(o) == 0 { // as cloneJSON: no bytes, no output
			out[i] = j.entryWith(i, nil)
			continue
		}
		at := len(buf)
		buf = append(buf, o...)
		out[i] = j.entryWith(i, json.RawMessage(buf[at:len(buf):len(buf)]))
	}
	return out
}
