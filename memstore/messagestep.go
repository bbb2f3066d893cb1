package memstore

import (
	"context"
	"fmt"

	"github.com/kindgi/agents/bindings"
)

// The message step capability, on the store and on its trusted journal.
var (
	_ bindings.MessageStepAppender = (*Store)(nil)
	_ bindings.MessageStepAppender = trustedJournal{}
)

// AppendMessageStep implements bindings.MessageStepAppender: the entries
// before the message and the message (AppendStepsAndMessage), then the
// message step's entry, encoded from the stored message, and the entries
// after it (AppendSteps, or FinishRun when in.Finish is set). memstore
// makes the two calls one after the other, each under its own locks, as
// bindings.MessageStepAppender allows; Step and After are checked before
// anything is stored, so an invalid entry stores nothing.
func (s *Store) AppendMessageStep(ctx context.Context, in bindings.MessageStepInput) (bindings.MessageStepResult, error) {
	return s.appendMessageStep(ctx, in, false)
}

// MessageStepStore implements bindings.MessageStepAppender: s.
func (s *Store) MessageStepStore() bindings.RunBinding { return s }

// MessageStepStore implements bindings.MessageStepAppender: the store.
func (t trustedJournal) MessageStepStore() bindings.RunBinding { return t.s }

// AppendMessageStep is Store.AppendMessageStep without the vouched checks.
func (t trustedJournal) AppendMessageStep(ctx context.Context, in bindings.MessageStepInput) (bindings.MessageStepResult, error) {
	return t.s.appendMessageStep(ctx, in, !t.s.checkTrusted)
}

// appendMessageStep is AppendMessageStep; trusted skips the checks the
// caller vouches for (bindings.TrustedJournal).
func (s *Store) appendMessageStep(ctx context.Context, in bindings.MessageStepInput, trusted bool) (bindings.MessageStepResult, error) {
	tail := make([]bindings.JournalEntry, 0, 1+len(in.After))
	tail = append(tail, in.Step)
	tail = append(tail, in.After...)
	tailIn := bindings.AppendStepsInput{TenantID: in.Steps.TenantID, RunID: in.Steps.RunID, Owner: in.Steps.Owner, Entries: tail}
	if in.Finish != "" && !validRunStatus(in.Finish) {
		return bindings.MessageStepResult{}, invalid("unknown run status " + string(in.Finish))
	}
	if !trusted {
		// The step's output is set below: check it as a completed entry
		// with no output yet.
		tail[0].Output = nil
		if err := checkSteps(tailIn); err != nil {
			return bindings.MessageStepResult{}, err
		}
	}
	before, appended, m, err := s.appendStepsAndMessage(ctx, in.Steps, in.Message, trusted)
	if err != nil {
		return bindings.MessageStepResult{Entries: before, Appended: appended, Message: m}, err
	}
	encode := in.Encode
	if encode == nil {
		encode = bindings.EncodeMessageStep
	}
	out, err := encode(&m)
	if err != nil {
		return bindings.MessageStepResult{Entries: before, Appended: appended, Message: m}, invalid(fmt.Sprintf("encode message step %s: %v", in.Step.Key, err))
	}
	tail[0].Output = out
	var stored []bindings.JournalEntry
	var tailAppended []bool
	if in.Finish != "" {
		stored, tailAppended, err = s.finishRun(ctx, bindings.FinishRunInput{TenantID: tailIn.TenantID, RunID: tailIn.RunID, Owner: tailIn.Owner, Entries: tail, Status: in.Finish}, trusted)
	} else {
		stored, tailAppended, err = s.appendSteps(ctx, tailIn, "", trusted)
	}
	if err != nil {
		return bindings.MessageStepResult{Entries: before, Appended: appended, Message: m}, err
	}
	res := bindings.MessageStepResult{Message: m,
		Entries:  make([]bindings.JournalEntry, 0, len(before)+len(stored)),
		Appended: make([]bool, 0, len(before)+len(stored))}
	res.Entries = append(append(res.Entries, before...), stored...)
	res.Appended = append(append(res.Appended, appended...), tailAppended...)
	return res, nil
}
