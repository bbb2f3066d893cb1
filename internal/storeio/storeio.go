// Package storeio holds the inputs and results of the calls memstore's and
// pgstore's native journal.Driver implementations are built on (a run's
// open, its appends, its message steps, its resume): the stores' own
// plumbing, not a binding any caller implements or type-asserts. Callers
// drive runs through journal.Driver. The calls are named here as the
// stores name them, capitalised (OpenRun for openRun, ResumeRun for
// resumeRun, AppendSteps for the append of entries).
package storeio

import (
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
)

// AppendStepsInput appends several journal entries to one run, in order;
// their Seq is ignored and a zero At means now.
type AppendStepsInput struct {
	TenantID string `json:"tenantId"`
	RunID    string `json:"runId"`
	// Owner, when set, must hold the run's lease (checked once for all
	// entries): otherwise nothing is stored and the error is
	// *agents.RunBusyError.
	Owner   string                  `json:"owner,omitempty"`
	Entries []bindings.JournalEntry `json:"entries"`
}

// OpenRunInput is the start of a run's drive: its snapshot and the run.
// Snapshot and Start name the same tenant and run.
type OpenRunInput struct {
	Snapshot bindings.RunSnapshotWriteInput `json:"snapshot"`
	Start    bindings.StartRunInput         `json:"start"`
}

// OpenRunResult is a run OpenRun started.
type OpenRunResult struct {
	// Run is the run, leased to Start.Owner.
	Run bindings.Run `json:"run"`
	// Created reports whether the call created the run (its journal is
	// then empty).
	Created bool `json:"created"`
	// Snapshot is the run's stored snapshot: the first one written for the
	// run, which may be an earlier call's.
	Snapshot bindings.RunSnapshotRecord `json:"snapshot"`
	// Journal is the run's journal, in append order, read under the lease
	// just taken.
	Journal []bindings.JournalEntry `json:"journal"`
}

// ReopenRunInput names a run a driver continues: a Resume, or a run a
// RunClaimer has just leased to Owner.
type ReopenRunInput struct {
	TenantID string `json:"tenantId"`
	RunID    string `json:"runId"`
	// Owner takes the run's lease for TTL, as RunBinding.AcquireLease
	// does, unless Held.
	Owner string        `json:"owner"`
	TTL   time.Duration `json:"ttl,omitempty"`
	// Held says the caller holds the run's lease already (a claim leased
	// it to Owner): nothing is leased, and the reads are as for any
	// caller.
	Held bool `json:"held,omitempty"`
}

// ReopenRunResult is what a resumed drive starts from.
type ReopenRunResult struct {
	// Run is the run as AcquireLease returned it, leased to Owner; zero
	// when the input was Held.
	Run bindings.Run `json:"run"`
	// Snapshot is the run's stored snapshot.
	Snapshot bindings.RunSnapshotRecord `json:"snapshot"`
	// Journal is the run's journal in append order, read after the lease
	// was taken.
	Journal []bindings.JournalEntry `json:"journal"`
}

// MessageStepInput is a message, the journal entries written with it, and
// the journal entry of the step that stored it: what a Commit with a
// Message writes.
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
	Message bindings.AppendMessageInput `json:"message"`
	// Finish, when set, ends the drive after the entries as
	// FinishRun does: the run's status becomes Finish and
	// Owner's lease is released.
	Finish bindings.RunStatus `json:"finish,omitempty"`
	// Encode, when set, encodes the stored message as the step's Output; it
	// must return what EncodeMessageStep returns (a caller's faster encoder
	// of the same bytes). Nil means EncodeMessageStep.
	Encode func(m bindings.ConversationMessage) ([]byte, error) `json:"-"`
}

// MessageStepResult is what a message step's write stored: the Entries,
// Appended and Message of the Commit of a message step (History stays
// nil). With an error, Entries and Appended are those of
// Steps.Entries[:StepIndex] when they were stored (the message was
// refused after them), and nil otherwise. A Trusted Commit's results may
// share memory with the input.
type MessageStepResult = journal.Committed

// OpenTurnInput is the start of a turn's drive for OpenTurn:
// the run to open, and how much of the conversation's history to read.
type OpenTurnInput struct {
	OpenRunInput
	// HistoryLimit, when at least 1, also reads the newest HistoryLimit
	// messages of the conversation (OpenTurnResult.History); 0 reads none.
	HistoryLimit int `json:"historyLimit,omitempty"`
}

// OpenTurnResult is what OpenTurn read and stored: the run as
// OpenRun opened it and the turn's conversation.
type OpenTurnResult struct {
	OpenRunResult
	// Conversation is the conversation the snapshot names
	// (OpenRunInput.Snapshot's TenantID and ConversationID) as
	// GetConversation returns it, read in the same call; HasConversation
	// is false when there is none (GetConversation would be
	// *agents.ConversationNotFoundError), and then Conversation is zero.
	Conversation    bindings.Conversation `json:"conversation"`
	HasConversation bool                  `json:"hasConversation"`
	// History is, when HistoryLimit was set and the conversation read, the
	// newest HistoryLimit messages of the conversation, oldest first, as
	// ReadMessages would return them, as of the read of Conversation: the
	// messages up to Conversation.MessageCount. A store that cannot tell
	// them so (a message came between its two reads) leaves it nil, and
	// the caller reads them itself.
	History []bindings.ConversationMessage `json:"history,omitempty"`
}

// UserMessageInput is a turn's user message, the journal entries written
// before it, and the history the turn reads right after it, for one call
// of AppendUserMessage.
type UserMessageInput struct {
	// Steps and Message are as for AppendStepsAndMessage.
	Steps   AppendStepsInput            `json:"steps"`
	Message bindings.AppendMessageInput `json:"message"`
	// HistoryLimit (at least 1) is the Limit of the history read: the
	// newest HistoryLimit messages before the stored message.
	HistoryLimit int `json:"historyLimit"`
}

// UserMessageResult is what AppendUserMessage stored and read, as a
// Commit of the message step that reads its history returns it: with an
// error, Entries and Appended are set when the entries were stored (the
// message was refused after them), and nil otherwise; with none, History
// is what ReadMessages returns for the message's conversation with
// BeforeSeq Message.Seq and Limit HistoryLimit (the newest messages before
// it, oldest first), read after the append in the same transaction.
type UserMessageResult = journal.Committed

// ResumeRunResult is what ResumeRun read and leased: the run as
// ReopenRun reopened it, and its approvals.
type ResumeRunResult struct {
	ReopenRunResult
	// Approvals are the run's approvals, each as the HitlBinding's
	// GetApproval returns it (expiry applied), read in the same call.
	Approvals []bindings.Approval `json:"approvals"`
}

// ReadTurnResult is what ReadTurn read.
type ReadTurnResult struct {
	// Exists is true when the run or its snapshot is stored: the turn
	// then opens it with OpenTurn (or OpenRun), and the rest of the result
	// is zero.
	Exists bool `json:"exists"`
	// Conversation, HasConversation and History are, when the run does
	// not exist, what OpenTurn reads with them (see OpenTurnResult), read
	// in the same call.
	Conversation    bindings.Conversation          `json:"conversation"`
	HasConversation bool                           `json:"hasConversation"`
	History         []bindings.ConversationMessage `json:"history,omitempty"`
}

// ReadResumeRunResult is what ReadResumeRun read: what
// ResumeRun reads, with no lease taken.
type ReadResumeRunResult struct {
	// ResumeRunResult is the snapshot, the journal and the approvals as
	// ResumeRun reads them; its Run is the run as read (not leased: its
	// status and lease as they are).
	ResumeRunResult
	// JournalVersion is the store's version of the run's journal as read:
	// a number that every write of the run's journal changes, read before
	// the journal (so that a journal read with more entries than this
	// version knows can only fail the lease). Only the store that returned
	// it reads it.
	JournalVersion int64 `json:"journalVersion"`
}

// LeaseAsRead is the lease a resumed drive's first write takes, in the same
// transaction, on the condition that the run is still as
// ReadResumeRun read it: its status, lease owner,
// lease expiry and journal version unchanged, and the lease free for the
// write's owner (free, expired or the owner's). The owner is the write's
// (AppendStepsInput.Owner, LeaseInput.Owner), who
// then holds the lease for TTL from the write, as AcquireLease would give
// it.
type LeaseAsRead struct {
	TTL time.Duration `json:"ttl"`
	// Run and JournalVersion are ReadResumeRun's.
	Run            bindings.Run `json:"run"`
	JournalVersion int64        `json:"journalVersion"`
}
