// Package drive is the machinery of a turn's drive over its journal: what
// package turn's run embeds as Journal, so that turn/ reads as the flow.
//
// # Layout
//
//   - step.go: Step, the one way a step is journaled: its replay, the
//     started entry of an effect and its attempts, the buffered or carried
//     result, the journaled failure.
//   - write.go: the writes (AppendEntry, BufferEntry, Carry, AppendMessage,
//     Flush, HoldLease, End), each one Commit; NoteAttempt and Fail.
//   - msgstep.go: the deferred message step (DeferMessage), written with the
//     drive's next Commit.
//   - commit.go: the one Commit call and what Open deferred (a new run's
//     open, a resumed run's lease), with its crash argument.
//   - reads.go: what Open read ahead (Reads) and the user message's
//     history, and its second write when the conversation changed.
//   - index.go, slab.go: the journal index by key and phase, its entries
//     in slabs (At, Record).
//   - pool.go: the pooled memory (Mem), the output arena, InPlace.
//   - codec.go: EncodeStep into the arena, DecodeOutcome, Journaled.
//   - failure.go: a failed step's error, journaled and rebuilt typed.
//   - lease.go: the lease keeper. ids.go: derived ids.
//
// # What it asks of the turn
//
// The package imports nothing of turn. Init takes the run's identity, its
// clock, lease TTL, run binding and journal driver (Config), and the turn
// as Flow (the messages it holds, whether an error is a step's outcome,
// the decision to take again after a changed conversation) and Steps
// (what a step reads first, a panic's error, events and logs).
//
// A step's output goes to the codec by pointer, never through an interface
// (Steps), which would move every step's output to the heap: what the turn
// knows of an output it says with Journal.EncodeWith.
package drive
