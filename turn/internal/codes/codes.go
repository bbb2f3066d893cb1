// Package codes gives the failures of turn's internal packages the codes
// turn gives its own: a store's uncoded error is persistence, a journal
// that cannot be read is run-journal-unavailable, a cancelled context is
// turn-aborted (external). It also sorts a drive's failures by their code
// (drive.go): which end the run, which belong to the driving process, and
// which a handoff's target refuses with.
package codes

import (
	"context"

	agents "github.com/kindgi/agents"
)

// Coded returns err when it carries a code, and a *agents.PersistenceError
// naming op otherwise.
func Coded(err error, op string) error {
	if agents.CodeOf(err) != "" {
		return err
	}
	return &agents.PersistenceError{Op: op, Err: err}
}

// Journal codes a failure to read or find run runID's journal.
func Journal(runID string, err error) error {
	if agents.CodeOf(err) == agents.CodeRunJournalUnavailable {
		return err
	}
	return &agents.RunJournalUnavailableError{RunID: runID, Err: err}
}

// Aborted returns the turn-aborted (external) error of ctx once it is
// done, and nil before.
func Aborted(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return &agents.TurnAbortedError{Reason: agents.AbortExternal, Err: err}
	}
	return nil
}
