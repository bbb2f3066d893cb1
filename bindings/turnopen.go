package bindings

import (
	"context"
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

// TurnOpener is an optional capability of a store that is a turn's
// RunSnapshotBinding, RunBinding and ConversationBinding at once: the
// reads at the start of a turn ride in the round trips of the writes
// before them (one round trip each fewer for a database).
//
// OpenTurn does what RunOpener.OpenRun does, with its errors, and reads
// the conversation in.Snapshot names as GetConversation would, with the
// newest in.HistoryLimit of its messages, in the same call (a missing
// conversation is not an error of OpenTurn: see
// OpenTurnResult.HasConversation). Nothing else is written.
//
// AppendUserMessage does what StepMessageAppender.AppendStepsAndMessage
// does, with its errors, and then, when the message is stored (by this
// call, or before under its ID), reads the history before it, as
// ReadMessages{BeforeSeq: the stored message's Seq, Limit:
// in.HistoryLimit} would, in the same transaction. When the read fails
// nothing of the call is stored.
//
// AppendUserMessageStep does what MessageStepAppender.AppendMessageStep
// does, with its errors, when the conversation holds in.MessageCount
// messages, checked under the lock the message append takes (so that the
// message gets the seq MessageCount+1, and the history read with the
// conversation is exactly the messages before it). Otherwise it stores
// nothing and returns ErrConversationChanged: the caller appends the
// message as it would have without the read (AppendUserMessage).
//
// TurnOpenerStore returns the binding whose runs, snapshots and
// conversations the calls read and write: the store value itself. A
// driver uses the capability only when that is the very binding it holds
// as its Runs, Snapshots and Conversations, so that a value embedding a
// store (and so promoting its methods) never has its own OpenRun,
// GetConversation, AppendStepsAndMessage, AppendMessageStep or ReadMessages
// bypassed.
type TurnOpener interface {
	OpenTurn(ctx context.Context, in OpenTurnInput) (OpenTurnResult, error)
	AppendUserMessage(ctx context.Context, in UserMessageInput) (UserMessageResult, error)
	AppendUserMessageStep(ctx context.Context, in UserMessageStepInput) (MessageStepResult, error)
	TurnOpenerStore() RunBinding
}

// ResumeRunResult is what RunResumer.ResumeRun read and leased: the run as
// ReopenRun reopened it, and its approvals.
type ResumeRunResult struct {
	ReopenRunResult
	// Approvals are the run's approvals, each as the HitlBinding's
	// GetApproval returns it (expiry applied), read in the same call.
	Approvals []Approval `json:"approvals"`
}

// RunResumer is an optional capability of a store that is a turn's
// RunSnapshotBinding, RunBinding and HitlBinding at once: the start of a
// resumed drive and the read of the run's approvals (which a run parked on
// approvals reads next) in one call (one round trip fewer for a database).
//
// ResumeRun does what RunReopener.ReopenRun does, with its errors, and
// reads every approval of the run (ApprovalRequest.RunID) as GetApproval
// would, in the same call; nothing else is written.
//
// RunResumerStore returns the store value itself: a driver uses the
// capability only when that is the very binding it holds as its Runs,
// Snapshots and Hitl, so that a value embedding a store never has its own
// methods bypassed.
type RunResumer interface {
	ResumeRun(ctx context.Context, in ReopenRunInput) (ResumeRunResult, error)
	RunResumerStore() RunBinding
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

// OptimisticTurnOpener is an optional capability of a TurnOpener: a turn
// of a new run opens it with its first write instead of a write of its
// own (one commit fewer for a database).
//
// ReadTurn writes nothing: it reports whether the run in.Start names (or
// its snapshot) is stored and, when it is not, reads the conversation and
// its history as OpenTurn does.
//
// OpenUserMessageStep, only when neither the run nor its snapshot is
// stored, writes the snapshot (in.Open.Snapshot), creates the run leased
// to in.Open.Start.Owner as OpenRun creates a new one, and does what
// AppendUserMessageStep does, with its errors — all or nothing. When the
// run or its snapshot exists it stores nothing and returns ErrRunExists;
// when AppendUserMessageStep would store nothing (ErrConversationChanged,
// or an error with no entries stored), neither the snapshot nor the run is
// stored either. A crash before it returns leaves nothing of the run.
//
// OptimisticTurnOpenerStore returns the store value itself, as
// TurnOpenerStore does.
type OptimisticTurnOpener interface {
	TurnOpener
	ReadTurn(ctx context.Context, in OpenTurnInput) (ReadTurnResult, error)
	OpenUserMessageStep(ctx context.Context, in OpenUserMessageStepInput) (MessageStepResult, error)
	OptimisticTurnOpenerStore() RunBinding
}
