package turn

import (
	"encoding/json"
	"slices"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/drive"
)

// The turn's lazy reads of its journal: step outputs a replay decodes
// only once something reads them (drive.DecodeOutcome, in place when the
// bytes are the journal read for the drive: drive.Journal.InPlace).

// loadPrompt decodes the prompt of a replayed render-prompt step
// (r.lazyPrompt), which the drive left undecoded until it is read:
// building the initial messages, or the provenance record.
func (r *run) loadPrompt() error {
	if e := r.lazyPrompt; e != nil {
		text, err := drive.DecodeOutcome[string](e, r.InPlace(e))
		if err != nil {
			return &agents.RunJournalUnavailableError{RunID: r.id, Err: err}
		}
		r.prompt, r.lazyPrompt = text, nil
	}
	return nil
}

// loadMessages decodes the initial messages of a replayed
// build-initial-messages step (r.lazyMessages), which the drive left
// undecoded until a step runs: only a step that runs reads the model's
// messages (a model call, a guardrail check, the provenance record), so a
// replay that runs nothing — a finished run folded, a Resume that finds its
// approval pending — never decodes them. Messages the drive appended
// meanwhile (r.messages) follow them.
func (r *run) loadMessages() error {
	e := r.lazyMessages
	if e == nil {
		return nil
	}
	msgs, err := drive.DecodeOutcome[[]bindings.ChatMessage](e, r.InPlace(e))
	if err != nil {
		return &agents.RunJournalUnavailableError{RunID: r.id, Err: err}
	}
	r.lazyMessages = nil
	r.messages = append(msgs, r.messages...)
	return nil
}

// parkedDecode is a parked approval entry's record, decoded by loadParked.
type parkedDecode struct {
	key string
	pr  parkRecord
}

// loadParked sets the running time of earlier drives from the parked
// approval entries of a journal (the latest a park recorded). Each
// entry's record is decoded once, here, and kept for the approval step
// that reads it (parkedRecord) — the first parked entry of a key, the one
// the journal index keeps. A record that does not decode as a whole still
// gives its running time as before (parkedElapsedMs).
func (r *run) loadParked(entries []bindings.JournalEntry) {
	for i := range entries {
		e := &entries[i]
		if e.Status != bindings.StepParked {
			continue
		}
		var pr parkRecord
		ms, ok := int64(0), false
		if drive.UnmarshalIn(e.Output, &pr, r.InPlace(e)) == nil {
			ms, ok = pr.ElapsedMs, true
			if !slices.ContainsFunc(r.parkedDecoded, func(p parkedDecode) bool { return p.key == e.Key }) {
				r.parkedDecoded = append(r.parkedDecoded, parkedDecode{key: e.Key, pr: pr})
			}
		} else {
			ms, ok = parkedElapsedMs(e.Output)
		}
		if ok && ms > r.elapsedBefore {
			r.elapsedBefore = ms
		}
	}
}

// parkedRecord is the record of parked entry e: the one loadParked
// decoded (handed out once), or decoded now.
func (r *run) parkedRecord(e *bindings.JournalEntry) (parkRecord, error) {
	for i := range r.parkedDecoded {
		if p := &r.parkedDecoded[i]; p.key == e.Key {
			pr := p.pr
			r.parkedDecoded = slices.Delete(r.parkedDecoded, i, i+1)
			return pr, nil
		}
	}
	var pr parkRecord
	err := drive.UnmarshalIn(e.Output, &pr, r.InPlace(e))
	return pr, err
}

// parkedElapsedMs reads the running time a parked approval entry recorded
// (parkRecord.ElapsedMs) from a record that does not decode as a whole.
func parkedElapsedMs(raw []byte) (int64, bool) {
	var pr struct {
		ElapsedMs int64 `json:"elapsedMs"`
	}
	if json.Unmarshal(raw, &pr) != nil {
		return 0, false
	}
	return pr.ElapsedMs, true
}
