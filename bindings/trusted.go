package bindings

import "context"

// TrustedJournal is an optional capability of a RunBinding that is a
// StepBatcher: journal writes for a caller that builds and checks every
// entry itself, so that the store need not check each entry again. A
// driver discovers it with a type assertion on its RunBinding; every
// caller that does not use it keeps the store's full checks.
//
// TrustedJournal returns a StepBatcher of the same store: AppendSteps on
// it writes the same journal with the same rules as the binding's own
// (idempotent per key and phase, the owner's lease checked, all or
// nothing, the same results and errors). When the binding is a
// RunFinisher or a StepMessageAppender, so is the returned value, with the
// same rules as the binding's own FinishRun and AppendStepsAndMessage.
//
// Its results may share memory with the call's input, to save the copies
// a caller that only reads them does not need: the entries returned may be
// in.Entries itself, each updated in place to the entry the store kept,
// the message returned may hold the input message's tool calls and
// metadata, and the appended flags may be shared with other calls. The
// caller must not write to the flags.
//
// A caller that writes through it vouches, for every call, that:
//
//   - the input's TenantID passes CheckID, and its RunID and Owner pass
//     CheckOptionalID;
//   - every entry's Key passes CheckStepKey, its Node passes
//     CheckOptionalID, its Status is StepStarted, StepCompleted,
//     StepFailed or StepParked, and its Output is empty or passes
//     CheckJSON;
//   - it never writes to an entry's Output, or to the message's Metadata,
//     after the call, so that the store may keep those bytes instead of a
//     copy of them;
//   - for AppendStepsAndMessage, the message's TenantID and
//     ConversationID pass CheckID, its ID, ToolCallID, RunID and
//     ParticipantID pass CheckOptionalID, and its Metadata and each tool
//     call's Arguments are empty or pass CheckJSON.
//
// That is all it vouches for, and all a store may skip: whatever depends
// on the stored state (the run exists, the lease is held, the
// conversation is open, the turn number is free) and what the list above
// does not name (a message's role and content, a run status) are checked
// as for any caller. A store may still run the vouched checks, too (a
// test build may, to prove a caller's vouch), and then refuses what fails
// them as it would for any caller. An entry that breaks the vouch is the
// caller's bug: a store that skipped the checks may store it as given.
//
// TrustedJournal also returns the binding whose journal it is: the store
// value itself. A caller uses the journal only when that is the very
// binding it holds, so that a value embedding a store (and so promoting
// its TrustedJournal) never has its own AppendSteps bypassed: for such a
// wrapper the store returned is the embedded one, not the wrapper.
type TrustedJournal interface {
	TrustedJournal() (journal StepBatcher, of RunBinding)
}

// OutputCopier is an optional capability of the StepBatcher a
// TrustedJournal returns. CopiesOutputs reports whether its store keeps
// copies of the entry outputs it is given, on every call of the journal
// (AppendSteps and, when it has them, FinishRun, AppendStepsAndMessage and
// AppendMessageStep, the message step's encoded output included), never
// the caller's bytes. When it does, the caller may write over the bytes of
// the outputs it passed once nothing the calls returned to it is in use
// (the entries returned may still share their outputs with the input).
type OutputCopier interface {
	CopiesOutputs() bool
}

// SharedJournalReader is an optional capability of the StepBatcher a
// TrustedJournal returns: RunBinding.ReadJournal without the copies. A
// resumed drive reads a run's whole journal once and only reads it: the
// outputs a store has kept never change, so a store that keeps them in
// memory may hand out its own bytes instead of a copy of each.
//
// ReadJournalShared appends the run's entries, in append order, to dst
// and returns the extended slice, with ReadJournal's values and errors.
// The slice and the JournalEntry values are the caller's own (a store
// writes only into dst's unused capacity, and keeps no reference to
// dst); each entry's Output, Key and Node may be the store's own stored
// bytes, shared with every other read. Of those bytes, the store
// promises that:
//
//   - it never writes them again, whatever happens to the run after the
//     read: appends of any caller (AppendStep, AppendSteps, FinishRun, the
//     message steps), a status change, a lease, retention deleting the
//     run (Pruner), or anything that rewrites or compacts stored entries
//     (such a store writes a new copy and leaves the bytes read before as
//     they were). An entry read keeps its values for as long as the
//     caller holds it;
//   - each Output is capped at its own length (cap equals len), so that
//     appending to it copies rather than writes over the bytes stored
//     after it.
//
// The caller vouches, as for the TrustedJournal's writes, that it never
// writes to an Output's bytes, and that nothing it hands to code it does
// not control (a Result, an event, a tool, a model) holds them: what
// leaves the caller is decoded into values of its own, a copy, or a
// string. Writing to them would change the store's journal for every
// reader. A store may check the vouch (memstore does with
// Options.CheckTrusted: it refuses the run's next journal call when bytes
// it handed out have changed); a caller that breaks it has a bug, and a
// store that does not check may keep what the caller wrote.
type SharedJournalReader interface {
	ReadJournalShared(ctx context.Context, tenantID, runID string, dst []JournalEntry) ([]JournalEntry, error)
}
