package turn

import (
	"context"
	"sync"
	"unsafe"

	"github.com/kindgi/agents/bindings"
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
// values of its own (strings, and copies of raw values: jdec.raw) and
// hands on nothing that aliases it, as the reader vouches.
func readJournal(ctx context.Context, b *Bindings, tenantID, runID string, dst []bindings.JournalEntry) ([]bindings.JournalEntry, error) {
	if sb, ok := b.Runs.(bindings.StepBatcher); ok {
		if sr, ok := trustedJournal(b.Runs, sb).(bindings.SharedJournalReader); ok {
			return sr.ReadJournalShared(ctx, tenantID, runID, dst)
		}
	}
	return b.Runs.ReadJournal(ctx, tenantID, runID)
}

// sharedOutput reports whether e is an entry of the journal a shared read
// loaded (r.loaded, with r.sharedLoaded), whose output no one ever
// writes: not one this drive wrote, whose output is in the drive's arena
// (newOutArena), written over by a later drive.
func (r *run) sharedOutput(e *bindings.JournalEntry) bool {
	if !r.sharedLoaded || len(r.loaded) == 0 {
		return false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(r.loaded)))
	p := uintptr(unsafe.Pointer(e))
	return p >= base && p < base+uintptr(len(r.loaded))*unsafe.Sizeof(*e)
}
