package turn

import (
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

// loadParked sets the running time of earlier drives from the parked
// approval entries of a journal (the latest a park recorded), decoding
// each record once for the approval step that reads it (parkedRecord).
func (r *run) loadParked(entries []bindings.JournalEntry) {
	r.elapsedBefore = max(r.elapsedBefore, r.parked.Load(&r.Journal, entries, func(pr parkRecord) int64 { return pr.ElapsedMs }))
}

// parkedRecord is the record of parked entry e: the one loadParked
// decoded (handed out once), or decoded now.
func (r *run) parkedRecord(e *bindings.JournalEntry) (parkRecord, error) {
	return r.parked.Take(&r.Journal, e)
}
