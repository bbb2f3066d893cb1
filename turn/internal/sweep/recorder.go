package sweep

import (
	"context"
	"maps"
	"sync"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
)

// Recorder notes the keys whose result entry one sweep's drive of a run
// appended (the store keeps one entry per key and phase, so exactly one
// driver appends an approval's outcome).
type Recorder struct {
	mu       sync.Mutex
	appended map[string]bool
}

// Wrap returns the bindings the drive journals through, noting in r what
// they append: jd wrapped when the turn journals through a store's own
// journal.Driver (jd not nil), else runs (journal.Adapt of it appends
// with AppendStep).
func (r *Recorder) Wrap(runs bindings.RunBinding, jd journal.Driver) (bindings.RunBinding, journal.Driver) {
	if jd != nil {
		return runs, &recordingJournal{Driver: jd, rec: r}
	}
	return &recordingRuns{RunBinding: runs, rec: r}, nil
}

// note records e when this drive appended its result.
func (r *Recorder) note(e bindings.JournalEntry, appended bool) {
	if appended && e.Status.Phase() == "result" {
		r.mu.Lock()
		r.appended[e.Key] = true
		r.mu.Unlock()
	}
}

// keys returns a copy of the keys noted so far.
func (r *Recorder) keys() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.appended)
}

// recordingRuns is the RunBinding of a sweep's drive without a journal
// driver of the store's own.
type recordingRuns struct {
	bindings.RunBinding
	rec *Recorder
}

// AppendStep appends through the wrapped binding and notes result entries
// it stored.
func (r *recordingRuns) AppendStep(ctx context.Context, in bindings.AppendStepInput) (bindings.JournalEntry, bool, error) {
	e, appended, err := r.RunBinding.AppendStep(ctx, in)
	if err == nil {
		r.rec.note(e, appended)
	}
	return e, appended, err
}

// recordingJournal is the journal.Driver of a sweep's drive over a store's
// own Driver: it notes the result entries each Commit appended.
type recordingJournal struct {
	journal.Driver
	rec *Recorder
}

// Commit commits through the wrapped driver and notes result entries it
// stored.
func (j *recordingJournal) Commit(ctx context.Context, in journal.CommitInput) (journal.Committed, error) {
	res, err := j.Driver.Commit(ctx, in)
	for i := range res.Entries {
		if i < len(res.Appended) {
			j.rec.note(res.Entries[i], res.Appended[i])
		}
	}
	return res, err
}
