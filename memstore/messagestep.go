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
// caller vouches for (bindings.TrustedJournal) and shares the results with
// the input, as the trusted AppendSteps does: the entries returned are
// in.Steps.Entries, the step's updated in place with its output.
func (s *Store) appendMessageStep(ctx context.Context, in bindings.MessageStepInput, trusted bool) (bindings.MessageStepResult, error) {
	all := in.Steps.Entries
	if in.StepIndex < 0 || in.StepIndex >= len(all) {
		return bindings.MessageStepResult{}, invalid(fmt.Sprintf("message step index %d of %d entries", in.StepIndex, len(all)))
	}
	if in.Finish != "" && !validRunStatus(in.Finish) {
		return bindings.MessageStepResult{}, invalid("unknown run status " + string(in.Finish))
	}
	if !trusted {
		// The caller's entries are its own: the step's output goes into a
		// copy. Checked before anything is stored, the step with no
		// output yet.
		all = append([]bindings.JournalEntry(nil), all...)
		all[in.StepIndex].Output = nil
		if err := checkSteps(bindings.AppendStepsInput{TenantID: in.Steps.TenantID, RunID: in.Steps.RunID, Owner: in.Steps.Owner, Entries: all}); err != nil {
			return bindings.MessageStepResult{}, err
		}
	}
	headIn := in.Steps
	headIn.Entries = all[:in.StepIndex:in.StepIndex]
	before, appended, m, err := s.appendStepsAndMessage(ctx, headIn, in.Message, trusted)
	if err != nil {
		return bindings.MessageStepResult{Entries: before, Appended: appended, Message: m}, err
	}
	encode := in.Encode
	if encode == nil {
		encode = bindings.EncodeMessageStep
	}
	out, err := encode(m)
	if err != nil {
		return bindings.MessageStepResult{Entries: before, Appended: appended, Message: m}, invalid(fmt.Sprintf("encode message step %s: %v", all[in.StepIndex].Key, err))
	}
	all[in.StepIndex].Output = out
	tailIn := in.Steps
	tailIn.Entries = all[in.StepIndex:]
	var stored []bindings.JournalEntry
	var tailAppended []bool
	if in.Finish != "" {
		stored, tailAppended, err = s.finishRun(ctx, bindings.FinishRunInput{TenantID: tailIn.TenantID, RunID: tailIn.RunID, Owner: tailIn.Owner, Entries: tailIn.Entries, Status: in.Finish}, trusted)
	} else {
		stored, tailAppended, err = s.appendSteps(ctx, tailIn, "", trusted)
	}
	if err != nil {
		return bindings.MessageStepResult{Entries: before, Appended: appended, Message: m}, err
	}
	res := bindings.MessageStepResult{Message: m}
	if trusted && allTrue(appended) && allTrue(tailAppended) {
		// The trusted appends updated the entries in place: all of them are
		// the result, with flags of the call's own.
		res.Entries, res.Appended = all, allAppended(len(all))
		return res, nil
	}
	res.Entries = append(append(make([]bindings.JournalEntry, 0, len(all)), before...), stored...)
	res.Appended = append(append(make([]bool, 0, len(all)), appended...), tailAppended...)
	return res, nil
}

// allTrue reports whether every flag is true.
func allTrue(flags []bool) bool {
	for _, f := range flags {
		if !f {
			return false
		}
	}
	return true
}
