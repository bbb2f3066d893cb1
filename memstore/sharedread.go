package memstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/kindgi/agents/bindings"
)

var _ bindings.SharedJournalReader = trustedJournal{}

// ReadJournalShared implements bindings.SharedJournalReader: ReadJournal
// into dst, each entry's key, node and output the journal's own stored
// bytes (see journal: text chunks are only ever appended to, never
// written over or copied, and a run's journal is never rewritten; a pruned
// run's chunks stay as they are for as long as anything holds them), each
// output capped at its length. With Options.CheckTrusted the store
// remembers what it handed out and refuses the run's next journal call
// (an *agents.InvalidMessageError) once those bytes have changed.
func (t trustedJournal) ReadJournalShared(ctx context.Context, tenantID, runID string, dst []bindings.JournalEntry) ([]bindings.JournalEntry, error) {
	s := t.s
	if err := alive(ctx); err != nil {
		return nil, err
	}
	if err := checkLookup(tenantID, "run id", runID); err != nil {
		return nil, err
	}
	if s.checkTrusted {
		s.runMu.Lock() // the check's record is written
		defer s.runMu.Unlock()
	} else {
		s.runMu.RLock()
		defer s.runMu.RUnlock()
	}
	r, err := s.run(tenantID, runID)
	if err != nil {
		return nil, err
	}
	if err := s.checkShared(r); err != nil {
		return nil, err
	}
	if s.checkTrusted {
		s.recordShared(r)
	}
	return r.journal.shared(dst), nil
}

// shared appends the entries to dst, as entries returns them but with
// the stored outputs themselves (out) instead of copies. Each entry is
// written in place, field by field: dst is usually a pooled slab on the
// heap, where copying a whole JournalEntry while a GC mark runs costs a
// bulk write barrier over its six pointers (≈1,000 instructions an
// entry).
func (j *journal) shared(dst []bindings.JournalEntry) []bindings.JournalEntry {
	n := len(dst)
	dst = slices.Grow(dst, len(j.recs))[:n+len(j.recs)]
	for i := range j.recs {
		j.fill(&dst[n+i], i, j.out(i))
	}
	return dst
}

// sharedText is the stored key, node and output of a journal's first n
// entries, back to back: what a shared read of them handed out.
func (j *journal) sharedText(n int) []byte {
	var b []byte
	for i := range n {
		rec := &j.recs[i]
		b = append(append(b, j.key(rec)...), j.str(rec.chunk, rec.keyOff+rec.keyLen, rec.node)...)
		b = append(b, j.out(i)...)
	}
	return b
}

// sharedCheck is what Options.CheckTrusted keeps of a run's shared reads:
// the number of entries handed out and a copy of their bytes (sharedText).
type sharedCheck struct {
	n    int
	text []byte
}

// recordShared remembers what a shared read of r hands out; the caller
// holds runMu for writing.
func (s *Store) recordShared(r *runRec) {
	if s.shared == nil {
		s.shared = map[*runRec]sharedCheck{}
	}
	n := r.journal.len()
	s.shared[r] = sharedCheck{n: n, text: r.journal.sharedText(n)}
}

// checkShared returns an *agents.InvalidMessageError when Options.
// CheckTrusted is set and bytes a shared read of r handed out have changed
// since (the reader broke its vouch: bindings.SharedJournalReader); the
// caller holds runMu.
func (s *Store) checkShared(r *runRec) error {
	if !s.checkTrusted {
		return nil
	}
	c, ok := s.shared[r]
	if !ok || bytes.Equal(r.journal.sharedText(c.n), c.text) {
		return nil
	}
	return invalid(fmt.Sprintf("run %s: the journal's stored bytes changed after a shared read (its reader wrote to them)", r.run.ID))
}
