package bindings

import (
	"context"
	"encoding/json"
)

// MessageStepInput is a message, the journal entries written with it, and
// the journal entry of the step that stored it, for one call of
// MessageStepAppender.AppendMessageStep.
type MessageStepInput struct {
	// Steps names the run and the lease owner, as for AppendSteps. Its
	// Entries are all the entries of the call, in order:
	// Entries[:StepIndex] are stored before the message (for instance the
	// result of the model call the message is the answer of);
	// Entries[StepIndex] is the completed entry of the step that stores the
	// message, whose Output is ignored: the store sets it to the stored
	// message, encoded by Encode; Entries[StepIndex+1:] are stored after it
	// (the decide steps that follow the message, the next effect's started
	// entry).
	Steps AppendStepsInput `json:"steps"`
	// StepIndex is the index of the message step's entry in Steps.Entries.
	StepIndex int `json:"stepIndex"`
	// Message is the message to append, as for AppendMessage, with its ID
	// set (a retry must name the same message).
	Message AppendMessageInput `json:"message"`
	// Finish, when set, ends the drive after the entries as
	// RunFinisher.FinishRun does: the run's status becomes Finish and
	// Owner's lease is released.
	Finish RunStatus `json:"finish,omitempty"`
	// Encode, when set, encodes the stored message as the step's Output; it
	// must return what EncodeMessageStep returns (a caller's faster encoder
	// of the same bytes). Nil means EncodeMessageStep.
	Encode func(m ConversationMessage) ([]byte, error) `json:"-"`
}

// MessageStepResult is what AppendMessageStep stored. With an error,
// Entries and Appended are those of Steps.Entries[:StepIndex] when they
// were stored (the message was refused after them), and nil otherwise.
type MessageStepResult struct {
	// Entries are the stored entries, one per entry of Steps.Entries (the
	// message step's with its Output), as AppendSteps returns them, and
	// Appended whether each was appended by this call. A
	// bindings.TrustedJournal's results may share memory with the input as
	// its AppendSteps's do.
	Entries  []JournalEntry `json:"entries"`
	Appended []bool         `json:"appended"`
	// Message is the stored message: this call's, or the one stored
	// before under its ID.
	Message ConversationMessage `json:"message"`
}

// EncodeMessageStep is the Output of a message step's entry: the stored
// message as encoding/json encodes it.
func EncodeMessageStep(m ConversationMessage) ([]byte, error) { return json.Marshal(m) }

// MessageStepAppender is an optional capability of a store that is both a
// turn's RunBinding and its ConversationBinding: a message and the journal
// entries around it, including the entry of the step that stored the
// message, in one call (one round trip and one transaction for a
// database). A driver uses it only when its run and conversation bindings
// are the same value, and otherwise calls AppendStepsAndMessage and then
// AppendSteps (or FinishRun) with the step's entry, which it builds from
// the returned message.
//
// AppendMessageStep does what these calls would:
//
//  1. AppendStepsAndMessage of the entries before the message step and
//     in.Message;
//  2. then, with the step's Output set to Encode(the stored message),
//     AppendSteps of the step's entry and those after it — or FinishRun
//     of them with Finish, when Finish is set.
//
// When the message is appended by this call, all of it is stored in one
// step, or none of it: a refused lease (*agents.RunBusyError) or a missing
// run (*agents.RunJournalUnavailableError) stores nothing. When the
// message is refused (its conversation is missing or closed, its turn
// taken), the entries before the step stay, as after call 1, nothing else is
// stored, and the error is the message's. When a message with its ID was
// stored before (a retry), the step's Output is that message's encoding, and
// a store may make the two calls one after the other (a crash between
// them leaves what a crash between them leaves for any driver: the message
// and the entries before it, but not the step's entry).
//
// Each entry is idempotent per (run, key, phase) as for AppendSteps: one
// stored already is returned as stored, with its appended flag false.
//
// MessageStepStore returns the binding whose journal and conversations
// AppendMessageStep writes: the store value itself. A driver uses the
// capability only when that is the very binding it holds, so that a value
// embedding a store (and so promoting its AppendMessageStep) never has its
// own AppendSteps and AppendStepsAndMessage bypassed.
type MessageStepAppender interface {
	AppendMessageStep(ctx context.Context, in MessageStepInput) (MessageStepResult, error)
	MessageStepStore() RunBinding
}
