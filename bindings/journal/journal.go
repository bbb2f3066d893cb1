package journal

import (
	"context"
	"time"

	"github.com/kindgi/agents/bindings"
)

// Driver is a store's journal for the drive of a run: Open at the drive's
// start, Commit for each of its writes. A store that is a Driver is one
// store for the runs, their snapshots, the conversations and the approvals
// it is opened and committed against: both calls read and write that
// store's bindings, exactly as the calls of the basic bindings they stand
// for would (see Adapt, the reference), in fewer round trips.
//
// # Open
//
// Open starts a drive of the run in.TenantID, in.RunID.
//
//   - With in.Create, the run is new (an Invoke): the snapshot is written
//     (the first one written for a run is kept: RunSnapshotBinding.Write)
//     and the run created, in status Create.Status (running when empty),
//     leased to in.Owner for in.TTL, as RunBinding.StartRun does. A run
//     that exists already is opened as StartRun opens it (its status
//     unchanged; *agents.RunBusyError while another owner holds an
//     unexpired lease), and Drive.Snapshot is then the run's stored
//     snapshot, which may be another input's: the caller compares.
//   - Without it, the run exists (a Resume, a claimed run): its snapshot is
//     read first (*agents.RunSnapshotMissingError when there is none, also
//     for a run of another tenant, and then nothing is leased), then the
//     lease is taken as RunBinding.AcquireLease takes it
//     (*agents.RunBusyError; *agents.RunJournalUnavailableError when the
//     run is missing), then the journal is read.
//
// The lease follows in.Lease. LeaseNow takes it in Open. LeaseHeld takes
// none: the caller holds it (a claim leased the run to in.Owner), and
// Drive.Run is zero. LeaseOnWrite lets the driver defer it to the drive's
// first Commit (Drive.Pending): for an existing run Open then writes
// nothing — it reads the run, and a lease another owner holds unexpired is
// still *agents.RunBusyError at once — and the first Commit takes the
// lease only if the run is still as read (Pending.AsRead); for a new run
// that neither exists nor has a snapshot, Open writes nothing at all, and
// the first Commit creates the snapshot and the run with its own write,
// only if neither exists by then (Pending.Create). A driver may always
// take the lease in Open instead (Drive.Pending nil): the caller must
// handle both.
//
// With in.ReadConversation, Open also reads the conversation the snapshot
// names (Drive.Conversation; HasConversation false when there is none,
// which is not an error of Open) and, when in.HistoryLimit is at least 1,
// its newest HistoryLimit messages as of that read (Drive.History). With
// in.ReadApprovals it reads the run's approvals (Drive.Approvals). A
// driver that cannot read one of them consistently leaves it unread
// (History nil, HasApprovals false), and the caller reads it itself.
//
// Open writes nothing but the snapshot, the run and the lease, and only
// those in.Create and in.Lease ask for. When it fails after taking a
// lease, the lease is released again.
//
// # Commit
//
// Commit is one write of the drive: in.Entries appended to the run's
// journal in order, each as RunBinding.AppendStep appends it — idempotent
// per (run, key, phase): an entry whose key and phase are stored already,
// or come earlier in the same call, is returned as stored, with its
// Appended flag false — then, with in.Finish, the run's status set and
// in.Owner's lease released. With in.Owner set, the owner must hold the
// run's lease unexpired by the store's clock: otherwise nothing is stored
// and the error is *agents.RunBusyError, whose LeaseExpired is set when
// the owner's own lease expired and no other owner holds one.
//
// With in.Message, the call also appends a message, between the entries:
// Entries[:Index] are stored before it, Entries[Index] is the message
// step's completed entry, whose Output the driver sets to the stored
// message's encoding (Encode, by default bindings.EncodeMessageStep: a
// retry's message is the one stored before under its ID, and the Output is
// its encoding), and Entries[Index+1:] are stored after it. Index may be
// len(Entries): then no entry of the call is the message's step (its
// caller journals the step later, with another Commit) and the message is
// appended after all the entries. With
// CheckCount, everything is stored only when the conversation still holds
// Count messages, checked under the message append's own lock (the
// message then gets the seq Count+1); otherwise nothing is stored and the
// error is bindings.ErrConversationChanged. With HistoryLimit at least 1
// and no CheckCount, the newest HistoryLimit messages before the stored
// message are read after it (Committed.History; with CheckCount the
// history is the one Open read). When the message is refused (its
// conversation is missing or closed, its turn number taken), the entries
// before it are stored, the rest is not, Committed.Entries holds those
// before it, and the error is the message's.
//
// With in.Pending (from this driver's Open of the run), the write also
// takes what is pending, all or nothing with the rest: a Pending.AsRead
// lease is taken for in.Owner only when the run's status, lease and
// journal are still as Open read them and its lease is free for in.Owner
// (otherwise *agents.RunBusyError, nothing stored: another driver took the
// run); a Pending.Create run is created, with its snapshot, only when
// neither exists (otherwise bindings.ErrRunExists, nothing stored: the
// caller opens the run again, without Create's shortcut). A Commit with
// nothing else to write takes what is pending alone. Once a Commit with a
// Pending stored anything (Committed.Entries set), what was pending is
// taken: later Commits pass no Pending. A retry, with the same Pending,
// of a Commit whose answer was lost is refused (*agents.RunBusyError or
// bindings.ErrRunExists) when the first one stored: what it took changed
// the run. The caller then opens the run again, as after any refusal.
//
// Commit is all or nothing, but for the refused message above: a failure
// stores none of it, and a crash before it returns leaves all of it or
// none (Adapt says where it cannot promise that). Invalid input (an entry
// key that breaks bindings.CheckStepKey, an unknown status, Index out of
// range, a Pending of another run) is *agents.InvalidMessageError and
// stores nothing; a missing run is *agents.RunJournalUnavailableError.
//
// With in.Trusted the caller vouches, for the call, what a
// trusted caller vouches (ids, keys, nodes, statuses and
// JSON checked already; it never writes an input Output or Metadata after
// the call): the driver may skip those checks and keep the input bytes.
//
// # Tenancy and context
//
// Every read and write is of in.TenantID's rows only: a run, snapshot,
// conversation or approval of another tenant is as missing. Both calls
// honour ctx: a cancelled context fails them before anything is stored,
// with ctx's error.
//
// # Memory
//
// Everything Open and Commit return is the caller's own, and never
// changes: the driver keeps no reference into a returned slice, and never
// writes, reuses or hands to another call the memory of a returned value
// (an entry's Key, Node and Output, a message's Metadata and tool call
// Arguments, the snapshot's Input). The caller may keep it, decode it in
// place and hold the decoded values for as long as it likes. Without
// Trusted the caller may also write into it: what the store keeps is not
// changed. With Trusted a returned value may share memory with the call's
// input or with what the store keeps (an entry's Output may be the stored
// bytes), and the caller vouches never to write into it either.
// RunDriverTests checks both halves (DriverResultsAreTheCallersOwn).
type Driver interface {
	Open(ctx context.Context, in OpenInput) (Drive, error)
	Commit(ctx context.Context, in CommitInput) (Committed, error)
}

// LeaseMode says when a drive takes its run's lease.
type LeaseMode uint8

// Lease modes of OpenInput.Lease.
const (
	// LeaseNow takes the lease in Open.
	LeaseNow LeaseMode = iota
	// LeaseHeld takes none: the caller holds the lease already (a
	// bindings.RunClaimer leased the run to the owner).
	LeaseHeld
	// LeaseOnWrite lets the driver take the lease with the drive's first
	// Commit (Drive.Pending), or in Open when it cannot.
	LeaseOnWrite
)

// Create is the new run an Open creates: its snapshot, whose TenantID and
// RunID are the OpenInput's and whose FlowID and FlowVersion are the
// run's, and the status the run is created in.
type Create struct {
	Snapshot bindings.RunSnapshotWriteInput `json:"snapshot"`
	// Status is the created run's status: empty is bindings.RunRunning.
	Status bindings.RunStatus `json:"status,omitempty"`
	// ParentRunID and ParentStepKey are recorded on the created run
	// (bindings.Run.ParentRunID, ParentStepKey): a sub-agent's child run.
	ParentRunID   string `json:"parentRunId,omitempty"`
	ParentStepKey string `json:"parentStepKey,omitempty"`
}

// OpenInput is the start of a drive for Driver.Open.
type OpenInput struct {
	TenantID string `json:"tenantId"`
	RunID    string `json:"runId"`
	// Owner is the drive's lease owner and TTL its lease's length (zero:
	// the store's default, as for StartRun and AcquireLease).
	Owner string        `json:"owner"`
	TTL   time.Duration `json:"ttl,omitempty"`
	Lease LeaseMode     `json:"lease,omitempty"`
	// Create, when set, is the run to create: an Invoke's. Nil opens an
	// existing run.
	Create *Create `json:"create,omitempty"`
	// ReadConversation reads the conversation the run's snapshot names,
	// with its newest HistoryLimit messages when HistoryLimit is at least
	// 1.
	ReadConversation bool `json:"readConversation,omitempty"`
	HistoryLimit     int  `json:"historyLimit,omitempty"`
	// ReadApprovals reads the run's approvals.
	ReadApprovals bool `json:"readApprovals,omitempty"`
	// Trusted: the caller vouches never to write into what Open returns
	// (see Driver's Memory).
	Trusted bool `json:"trusted,omitempty"`
}

// Drive is what Open read and stored.
type Drive struct {
	// Run is the run as leased to the owner; the run as read when
	// Pending.AsRead is set; zero when the lease was LeaseHeld or
	// Pending.Create is set.
	Run bindings.Run `json:"run"`
	// Snapshot is the run's stored snapshot (Create's own, as given, when
	// Pending.Create is set).
	Snapshot bindings.RunSnapshotRecord `json:"snapshot"`
	// Journal is the run's journal, in append order, read after the lease
	// was taken (or, pending, with the state Pending.AsRead checks).
	Journal []bindings.JournalEntry `json:"journal"`
	// Conversation is the conversation the snapshot names, as
	// GetConversation returns it; HasConversation is false when it was not
	// read or there is none.
	Conversation    bindings.Conversation `json:"conversation"`
	HasConversation bool                  `json:"hasConversation"`
	// History is the conversation's newest HistoryLimit messages, oldest
	// first, as of the read of Conversation (the messages up to its
	// MessageCount); nil when not read.
	History []bindings.ConversationMessage `json:"history,omitempty"`
	// Approvals are the run's approvals as GetApproval returns them
	// (expiry applied), when HasApprovals.
	Approvals    []bindings.Approval `json:"approvals,omitempty"`
	HasApprovals bool                `json:"hasApprovals"`
	// Pending, when set, is what the drive's first Commit takes.
	Pending *Pending `json:"pending,omitempty"`
}

// Pending is what an Open deferred to the drive's first Commit: exactly
// one of Create and AsRead is set. Only the driver that returned it reads
// it.
type Pending struct {
	// TTL is the lease's length once taken.
	TTL time.Duration `json:"ttl,omitempty"`
	// Create is the run to create with the first write.
	Create *Create `json:"create,omitempty"`
	// AsRead is the lease to take with the first write, on the condition
	// that the run is still as read.
	AsRead *AsRead `json:"asRead,omitempty"`
}

// AsRead is the state of a run as Open read it, which a Pending lease
// requires unchanged.
type AsRead struct {
	// Run is the run as read: its status, lease owner and expiry.
	Run bindings.Run `json:"run"`
	// Version is the store's version of the run's journal as read: a
	// number every write of the journal changes, read no later than the
	// journal.
	Version int64 `json:"version"`
}

// Message is the message a Commit appends, and the message step that
// records it.
type Message struct {
	// Index is the index in CommitInput.Entries of the message step's
	// completed entry, whose Output the driver sets; len(Entries) when the
	// call holds no entry of the message's step.
	Index int `json:"index"`
	// Message is the message, with its ID set (a retry names the same
	// message).
	Message bindings.AppendMessageInput `json:"message"`
	// Encode, when set, encodes the stored message as the step's Output;
	// it must return what bindings.EncodeMessageStep returns.
	Encode func(bindings.ConversationMessage) ([]byte, error) `json:"-"`
	// CheckCount stores the call only when the conversation holds Count
	// messages (bindings.ErrConversationChanged otherwise).
	CheckCount bool `json:"checkCount,omitempty"`
	Count      int  `json:"count,omitempty"`
	// HistoryLimit, at least 1 and without CheckCount, reads the newest
	// HistoryLimit messages before the stored message after the append.
	HistoryLimit int `json:"historyLimit,omitempty"`
}

// CommitInput is one write of a drive for Driver.Commit.
type CommitInput struct {
	TenantID string `json:"tenantId"`
	RunID    string `json:"runId"`
	// Owner, when set, must hold the run's lease (or take Pending).
	Owner   string                  `json:"owner,omitempty"`
	Entries []bindings.JournalEntry `json:"entries,omitempty"`
	// Message, when set, is a message and its step among Entries.
	Message *Message `json:"message,omitempty"`
	// Finish, when set, ends the drive after the entries: the run's status
	// becomes Finish and Owner's lease is released.
	Finish bindings.RunStatus `json:"finish,omitempty"`
	// Pending is the Drive's Pending, on the drive's first Commit.
	Pending *Pending `json:"pending,omitempty"`
	// Trusted: the caller vouches what a trusted caller
	// vouches (see Driver).
	Trusted bool `json:"trusted,omitempty"`
}

// Committed is what a Commit stored.
type Committed struct {
	// Entries holds one stored entry per input entry, in order (the message
	// step's with its Output), and Appended whether this call appended
	// each. With an error they are nil, but for a refused message: then
	// they are the entries before it.
	Entries  []bindings.JournalEntry `json:"entries"`
	Appended []bool                  `json:"appended"`
	// Message is the stored message: this call's, or the one stored
	// before under its ID.
	Message bindings.ConversationMessage `json:"message"`
	// History is the history Message.HistoryLimit asked for, oldest first.
	History []bindings.ConversationMessage `json:"history,omitempty"`
}
