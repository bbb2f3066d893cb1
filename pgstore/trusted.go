package pgstore

import (
	"context"

	"github.com/kindgi/agents/bindings"
)

var _ bindings.TrustedJournal = (*Store)(nil)

// TrustedJournal implements bindings.TrustedJournal: the returned
// batcher (also a RunFinisher, a StepMessageAppender and a
// MessageStepAppender) skips the checks its caller vouches for — of the
// input's ids, every entry's key, node, status and output
// (bindings.CheckJSON), and the message's ids, metadata and tool call
// arguments — and writes what the Store's own methods write, with the same
// results and errors for everything else (a message's role and content, a
// run status, the run, the lease, the conversation). Outputs are still
// stored in the form jsonb holds (see Wrap). It is a bindings.OutputCopier:
// what a call sends is encoded into the call's own buffers, so the caller
// may write over its outputs once the call has returned. The binding it
// returns is s.
func (s *Store) TrustedJournal() (bindings.StepBatcher, bindings.RunBinding) {
	return trustedJournal{s}, s
}

// trustedJournal is the Store's journal for a caller that vouches for
// what it writes (bindings.TrustedJournal).
type trustedJournal struct{ s *Store }

var (
	_ bindings.RunFinisher         = trustedJournal{}
	_ bindings.StepMessageAppender = trustedJournal{}
	_ bindings.MessageStepAppender = trustedJournal{}
	_ bindings.OutputCopier        = trustedJournal{}
)

// AppendSteps is Store.AppendSteps without the vouched checks.
func (t trustedJournal) AppendSteps(ctx context.Context, in bindings.AppendStepsInput) ([]bindings.JournalEntry, []bool, error) {
	return t.s.appendSteps(ctx, "append steps", in, "", nil, true)
}

// FinishRun is Store.FinishRun without the vouched checks.
func (t trustedJournal) FinishRun(ctx context.Context, in bindings.FinishRunInput) ([]bindings.JournalEntry, []bool, error) {
	return t.s.finishRun(ctx, in, true)
}

// AppendStepsAndMessage is Store.AppendStepsAndMessage without the vouched
// checks.
func (t trustedJournal) AppendStepsAndMessage(ctx context.Context, steps bindings.AppendStepsInput, msg bindings.AppendMessageInput) ([]bindings.JournalEntry, []bool, bindings.ConversationMessage, error) {
	return t.s.appendStepsAndMessage(ctx, steps, msg, true)
}

// AppendMessageStep is Store.AppendMessageStep without the vouched checks.
func (t trustedJournal) AppendMessageStep(ctx context.Context, in bindings.MessageStepInput) (bindings.MessageStepResult, error) {
	return t.s.appendMessageStep(ctx, in, nil, true)
}

// MessageStepStore implements bindings.MessageStepAppender: the Store.
func (t trustedJournal) MessageStepStore() bindings.RunBinding { return t.s }

// CopiesOutputs implements bindings.OutputCopier: a call's outputs are
// copied into the statement it sends and are not kept after it returns.
func (t trustedJournal) CopiesOutputs() bool { return true }
