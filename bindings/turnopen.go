package bindings

import "context"

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
}

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

// TurnOpener is an optional capability of a store that is a turn's
// RunSnapshotBinding, RunBinding and ConversationBinding at once: the
// reads at the start of a turn ride in the round trips of the writes
// before them (one round trip each fewer for a database).
//
// OpenTurn does what RunOpener.OpenRun does, with its errors, and reads
// the conversation in.Snapshot names as GetConversation would, in the
// same call (a missing conversation is not an error of OpenTurn: see
// OpenTurnResult.HasConversation). Nothing else is written.
//
// AppendUserMessage does what StepMessageAppender.AppendStepsAndMessage
// does, with its errors, and then, when the message is stored (by this
// call, or before under its ID), reads the history before it, as
// ReadMessages{BeforeSeq: the stored message's Seq, Limit:
// in.HistoryLimit} would, in the same transaction. When the read fails
// nothing of the call is stored.
//
// TurnOpenerStore returns the binding whose runs, snapshots and
// conversations the calls read and write: the store value itself. A
// driver uses the capability only when that is the very binding it holds
// as its Runs, Snapshots and Conversations, so that a value embedding a
// store (and so promoting its methods) never has its own OpenRun,
// GetConversation, AppendStepsAndMessage or ReadMessages bypassed.
type TurnOpener interface {
	OpenTurn(ctx context.Context, in OpenRunInput) (OpenTurnResult, error)
	AppendUserMessage(ctx context.Context, in UserMessageInput) (UserMessageResult, error)
	TurnOpenerStore() RunBinding
}
