package drive

import (
	"encoding/json"
	"slices"

	"github.com/kindgi/agents/bindings"
)

// Parked holds the records of a journal's parked entries (a park's
// approval records, of type T), each decoded once by Load and handed once
// by Take to the step that reads it.
type Parked[T any] struct{ recs []parkedRec[T] }

// parkedRec is one parked entry's decoded record.
type parkedRec[T any] struct {
	key string
	rec T
}

// Load decodes the parked entries of entries, the journal j read for the
// drive, keeping each key's first (the one the journal index keeps), and
// returns the latest running time they recorded: elapsed of a decoded
// record, or the elapsedMs field alone of one that does not decode as a
// whole (ParkedElapsedMs).
func (p *Parked[T]) Load(j *Journal, entries []bindings.JournalEntry, elapsed func(T) int64) int64 {
	var latest int64
	for i := range entries {
		e := &entries[i]
		if e.Status != bindings.StepParked {
			continue
		}
		var rec T
		ms, ok := int64(0), false
		if UnmarshalIn(e.Output, &rec, j.InPlace(e)) == nil {
			ms, ok = elapsed(rec), true // by value: &rec would escape
			if !slices.ContainsFunc(p.recs, func(q parkedRec[T]) bool { return q.key == e.Key }) {
				p.recs = append(p.recs, parkedRec[T]{key: e.Key, rec: rec})
			}
		} else {
			ms, ok = ParkedElapsedMs(e.Output)
		}
		if ok && ms > latest {
			latest = ms
		}
	}
	return latest
}

// Take is the record of parked entry e of j: the one Load decoded (handed
// out once), or decoded now.
func (p *Parked[T]) Take(j *Journal, e *bindings.JournalEntry) (T, error) {
	for i := range p.recs {
		if q := &p.recs[i]; q.key == e.Key {
			rec := q.rec
			p.recs = slices.Delete(p.recs, i, i+1)
			return rec, nil
		}
	}
	var rec T
	err := UnmarshalIn(e.Output, &rec, j.InPlace(e))
	return rec, err
}

// ParkedElapsedMs reads the running time a parked entry recorded (its
// elapsedMs field) from a record that does not decode as a whole.
func ParkedElapsedMs(raw []byte) (int64, bool) {
	var pr struct {
		ElapsedMs int64 `json:"elapsedMs"`
	}
	if json.Unmarshal(raw, &pr) != nil {
		return 0, false
	}
	return pr.ElapsedMs, true
}
