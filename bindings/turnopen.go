package bindings

import (
	"errors"
)

// OpenTurnInput is the start of a turn's drive for TurnOpener.OpenTurn:
// the run to open, and how much of the conversation's history to read.
type OpenTurnInput struct {
	OpenRunInput
	// HistoryLimit, when at least 1, also reads the newest HistoryLimit
	// messages of the conversation (OpenTurnResult.History); 0 reads none.
	HistoryLimit int `json:"historyLimit,omitempty"`
}

// OpenTurnResult is what TurnOpener.OpenTurn read and stored: the run as
// OpenRun opened it and the turn's conversation.
type OpenTurnResult struct {
	OpenRunResult
	// Conversation is the conversation the snapshot names
	// (OpenRunInput.Snapshot's TenantID and ConversationID) as
	// GetConversation returns it, read in the same call; HasConversation
	// is false when there is none (GetConversation would be
	// *agents.ConversationNotFoundError), and then Conversation is zero.
	Conversation    Conversation `json:"conversation"`
	HasConversation bool         `json:"hasConversation"`
	// History is, when HistoryLimit was set and the conversation read, the
	// newest HistoryLimit messages of the conversation, oldest first, as
	// ReadMessages would return them, as of the read of Conversation: the
	// messages up to Conversation.MessageCount. A store that cannot tell
	// them so (a message came between its two reads) leaves it nil, and
	// the caller reads them itself.
	History []ConversationMessage `json:"history,omitempty"`
}

// UserMessageStepInput is a turn's user message appended as a message
// step (MessageStepInput), on the condition that the conversation is
// still as the caller read it, for TurnOpener.AppendUserMessageStep.
type UserMessageStepInput struct {
	MessageStepInput
	// MessageCount is the conversation's MessageCount the caller read:
	// the call stores anything only when the conversation still holds
	// that many messages.
	MessageCount int `json:"messageCount"`
}

// ErrConversationChanged is AppendUserMessageStep's error when a message
// was appended to the conversation (or it was deleted) since the caller
// read it: nothing was stored.
var ErrConversationChanged = errors.New("the conversation changed since it was read")

// UserMessageInput is a turn's user message, the journal entries written
// before it, and the history the turn reads right after it, for one call
// of TurnOpener.AppendUserMessage.
type UserMessageInput struct {
	// Steps and Message are as for StepMessageAppender.AppendStepsAndMessage.
	Steps   AppendStepsInput   `json:"steps"`
	Message AppendMessageInput `json:"message"`
	// HistoryLimit (at least 1) is the Limit of the history read: the
	// newest HistoryLimit messages before the stored message.
	HistoryLimit int `json:"historyLimit"`
}

// UserMessageResult is what TurnOpener.AppendUserMessage stored and read.
type UserMessageResult struct {
	// Entries, Appended and Message are what AppendStepsAndMessage
	// returns: with an error, Entries and Appended are set when the
	// entries were stored (the message was refused after them), and nil
	// otherwise.
	Entries  []JournalEntry      `json:"entries"`
	Appended []bool              `json:"appended"`
	Message  ConversationMessage `json:"message"`
	// History is, when the message is stored (no error), what
	// ReadMessages returns for the message's conversation with BeforeSeq
	// Message.Seq and Limit HistoryLimit: the newest messages before it,
	// oldest first, read after the append in the same transaction.
	History []ConversationMessage `json:"history"`
}

// ResumeRunResult is what RunResumer.ResumeRun read and leased: the run as
// ReopenRun reopened it, and its approvals.
type ResumeRunResult struct {
	ReopenRunResult
	// Approvals are the run's approvals, each as the HitlBinding's
	// GetApproval returns it (expiry applied), read in the same call.
	Approvals []Approval `json:"approvals"`
}

// ReadTurnResult is what OptimisticTurnOpener.ReadTurn read.
type ReadTurnResult struct {
	// Exists is true when the run or its snapshot is stored: the turn
	// then opens it with OpenTurn (or OpenRun), and the rest of the result
	// is zero.
	Exists bool `json:"exists"`
	// Conversation, HasConversation and History are, when the run does
	// not exist, what OpenTurn reads with them (see OpenTurnResult), read
	// in the same call.
	Conversation    Conversation          `json:"conversation"`
	HasConversation bool                  `json:"hasConversation"`
	History         []ConversationMessage `json:"history,omitempty"`
}

// OpenUserMessageStepInput is a new run's opening and its first write in
// one call of OptimisticTurnOpener.OpenUserMessageStep.
type OpenUserMessageStepInput struct {
	// Open is the run to create, as for RunOpener.OpenRun; its lease owner
	// is the step's (UserMessageStepInput's Steps.Owner).
	Open OpenRunInput `json:"open"`
	UserMessageStepInput
}

// ErrRunExists is OpenUserMessageStep's error when the run or its
// snapshot is stored already: nothing was stored, and the caller opens the
// run as it would have without the optimistic open (OpenRun, with the
// checks of an existing run).
var ErrRunExists = errors.New("the run exists already")
