package bindings

import (
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
