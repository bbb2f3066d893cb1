package turn

import (
	"context"
	"sync"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/alias"
)

// loadedSlab holds the journal a Resume loads (loadJournal indexes it in
// place) when the store reads it into the caller's memory
// (bindings.SharedJournalReader): 24 entries, twice the 11 of a turn
// parked on one approval (a longer journal is read into a slice of the
// store's making). Resume takes one from
// loadedPool and gives it back when the drive has returned, as it does the
// run's own memory (runMem): nothing the drive hands out points into it.
type loadedSlab [24]bindings.JournalEntry

var loadedPool = sync.Pool{New: func() any { return new(loadedSlab) }}

// readJournal is the run binding's ReadJournal, through the store's
// trusted journal when it is a bindings.SharedJournalReader: the entries
// appended to dst, sharing the bytes the store keeps instead of copies of
// them. The turn only reads a loaded entry's output: it decodes it into
// values of its own (strings, and copies of raw values: internal/journalcodec) and
// hands on nothing that aliases it, as the reader vouches.
func readJournal(ctx context.Context, b *Bindings, tenantID, runID string, dst []bindings.JournalEntry) ([]bindings.JournalEntry, error) {
	if sb, ok := b.Runs.(bindings.StepBatcher); ok {
		if sr, ok := trustedJournal(b.Runs, sb).(bindings.SharedJournalReader); ok {
			return sr.ReadJournalShared(ctx, tenantID, runID, dst)
		}
	}
	return b.Runs.ReadJournal(ctx, tenantID, runID)
}

// inPlace reports whether e's output may be decoded in place, the
// strings decoded sharing its bytes (unmarshalIn): e is an entry of the
// journal read for this drive (r.loaded), whose bytes no one writes — the
// caller's own copy (RunBinding.ReadJournal, a RunOpener's or
// RunReopener's journal: returned values are copies), or a shared read's
// (bindings.SharedJournalReader), which its store never writes again —
// and its output is not in the pooled run's output arena, which later
// drives write over (newOutArena). An entry this drive wrote is decoded
// from a copy, as before.
func (r *run) inPlace(e *bindings.JournalEntry) bool {
	if !alias.Within(e, r.loaded) {
		return false
	}
	if m := r.mem; m != nil && alias.BytesWithin(e.Output, m.arena) {
		return false
	}
	return true
}
