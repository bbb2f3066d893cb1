// Package journal is the driver side of a turn's run journal, as
// database/sql/driver is of database/sql: one interface, Driver, that a
// store implements for the fast path of a drive (two calls, Open and
// Commit), and one adapter, Adapt, that builds a Driver from the basic
// bindings (bindings.RunSnapshotBinding, RunBinding, ConversationBinding
// and HitlBinding) for a store that does not. The adapter is also the
// reference implementation: what it does, call by call, is what every
// Driver's Open and Commit mean.
//
// # How the turn uses it
//
// A turn holds exactly one Driver, chosen once, explicitly, when its
// bindings are made — never probed by type assertion on every call, and
// never guarded by "which store am I" checks: turn.Bindings.Journal, which
// turn.StoreBindings(store) sets to the store when it is a Driver
// (memstore.Store and pgstore.Store are). A host that binds its own Runs,
// Snapshots or Conversations (a wrapper, a test double) leaves it nil and
// the turn uses journal.Adapt of exactly what it bound, so its methods
// are never bypassed. A drive then calls (turn/commit.go):
//
//   - Open once, at its start: Invoke with OpenInput.Create (the snapshot
//     and the run), ReadConversation and Lease LeaseOnWrite (the
//     optimistic open) when the agent reads history, LeaseNow otherwise;
//     Resume with Lease LeaseOnWrite (the optimistic lease) and
//     ReadApprovals; a worker's drive of a claimed run with Lease
//     LeaseHeld; Submit with a queued Create. What Open read replaces
//     GetConversation, ReadMessages, ReadJournal and GetApproval at the
//     start of the drive; Drive.Pending, when set, goes with the drive's
//     first Commit.
//   - Commit for every write: the buffered entries with the next effect's
//     started entry; a message step (Message) with the count condition for
//     the deferred user message; a message with no step entry
//     (Message.Index == len(Entries)) with the history read after it;
//     Finish at the end; Pending on the first write. A Commit with nothing
//     to write but a Pending takes what is pending alone (before a call
//     sent again, an approval request, a provenance emit).
//
// The lease's renewal (AcquireLease), its release, and writes outside the
// journal (approvals, provenance, compliance, auto-close, DeferRun) stay
// calls of the basic bindings.
//
// # What it replaces
//
// These optional capabilities of package bindings existed only for the
// turn's hot path, and each was one case of Open or Commit. They, their
// "…Store() RunBinding" identity methods and their bindingstest suites are
// gone; memstore's and pgstore's drivers keep what they were built on as
// unexported methods (with their inputs in internal/storeio), and every
// behaviour the suites checked that a Driver must have is a case of
// bindingstest.RunDriverTests:
//
//   - StepBatcher (AppendSteps): Commit of entries.
//   - RunFinisher (FinishRun): Commit with Finish.
//   - RunOpener (OpenRun): Open with Create and LeaseNow.
//   - StepMessageAppender (AppendStepsAndMessage) and MessageStepAppender
//     (AppendMessageStep, MessageStepStore): Commit with Message.
//   - TurnOpener (OpenTurn, AppendUserMessage, AppendUserMessageStep,
//     TurnOpenerStore): Open with ReadConversation; Commit with
//     Message.HistoryLimit or Message.CheckCount.
//   - OptimisticTurnOpener (ReadTurn, OpenUserMessageStep,
//     OptimisticTurnOpenerStore) and ErrRunExists: Open with Create and
//     LeaseOnWrite; Commit with a Pending.Create.
//   - RunReopener (ReopenRun) and RunResumer (ResumeRun, RunResumerStore):
//     Open without Create, with ReadApprovals.
//   - OptimisticRunResumer (ReadResumeRun, AppendStepsAsRead,
//     AppendMessageStepAsRead, FinishRunAsRead, TakeLeaseAsRead,
//     OptimisticRunResumerStore) and LeaseAsRead: Open with LeaseOnWrite;
//     Commit with a Pending.AsRead.
//   - TrustedJournal, OutputCopier and SharedJournalReader: OpenInput.Trusted
//     and CommitInput.Trusted, with the memory contract written on Driver.
//
// bindings.ErrConversationChanged and bindings.ErrRunExists stay: they are
// Commit's errors.
package journal
