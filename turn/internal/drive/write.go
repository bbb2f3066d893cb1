package drive

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/internal/alias"
)

// The drive's writes: every entry goes through AppendEntry (at once) or
// BufferEntry and Carry (with the next write), every message through
// AppendMessage or DeferMessage, and each of them is one Commit (commit.go).

// errNoResult is the error of a write while a finished run is folded.
func (j *Journal) errNoResult(key string) error {
	return &agents.RunJournalUnavailableError{RunID: j.runID, Err: fmt.Errorf("the finished run's journal has no result for step %s", key)}
}

// AppendEntry writes one journal entry at once, under the driver's lease,
// and indexes what the driver kept (the first entry of that key and
// phase). The decide results buffered before it are written in the same
// Commit, ahead of it.
func (j *Journal) AppendEntry(ctx context.Context, key, node string, status bindings.StepStatus, output json.RawMessage, se *bindings.StepError) (bindings.JournalEntry, bool, error) {
	if j.Replaying {
		return bindings.JournalEntry{}, false, j.errNoResult(key)
	}
	if err := j.CheckLease(); err != nil {
		return bindings.JournalEntry{}, false, err
	}
	entries, e := j.bufSlot() // the buffer and e after it, not buffered
	setEntry(e, key, node, status, output, se, j.now())
	stored, appended, err := j.writeEntries(ctx, entries)
	if err != nil {
		return bindings.JournalEntry{}, false, err
	}
	last := len(stored) - 1
	j.recordAt(&stored[last]) // in place when the driver updated e there (CommitInput.Trusted)
	return stored[last], appended[last], nil
}

// BufferEntry records the completed outcome of a decide step. It is only
// buffered: it is written with the next entry that must be written at
// once (a started marker, an effect step's result, a park, a failure), by
// Flush before the next external side effect, or by the end of the drive
// — whichever comes first.
//
// Why a crash that loses the buffer is safe: a buffered entry is the
// result of a step that only reads and decides (setup, render-prompt,
// run-retrievals, build-initial-messages, the dispatch plan, budget-check,
// compose-result, and evaluate-guardrails with no guardrail to check) or
// whose effect is idempotent under a deterministic key (a message append,
// the provenance emit). Nothing outside the run sees a buffered decision
// before it is stored: every model call, tool call and approval request
// starts by writing its started entry, which carries the buffer (one sent
// again after a crash writes the buffer first: HoldLease); every
// message append and provenance emit runs Flush first; the run's status
// changes and the return to the caller come after the buffer is written.
// So a resumed drive finds those steps without a result and runs them
// again: a read-and-decide step decides afresh (possibly differently, say
// a later now, but nothing was done with the lost decision), and an
// idempotent write stores nothing twice and returns what it stored.
func (j *Journal) BufferEntry(ctx context.Context, key, node string, output json.RawMessage) (bindings.JournalEntry, bool, error) {
	if j.Replaying {
		return bindings.JournalEntry{}, false, j.errNoResult(key)
	}
	if err := j.CheckLease(); err != nil {
		return bindings.JournalEntry{}, false, err
	}
	var e *bindings.JournalEntry
	if n := len(j.buf); n > 0 && n < cap(j.buf) {
		j.buf = j.buf[:n+1] // the same array: no pointer word written
		e = &j.buf[n]
	} else {
		var b []bindings.JournalEntry
		b, e = j.bufSlot()
		j.buf = b
	}
	// As setEntry, and the node, status and error too only when the slot
	// does not hold them (setEntry, inlined, leaves them to this caller).
	if !alias.SameString(e.Node, node) {
		e.Node = node
	}
	if !alias.SameString(string(e.Status), string(bindings.StepCompleted)) {
		e.Status = bindings.StepCompleted
	}
	if e.Error != nil {
		e.Error = nil
	}
	setEntryKeyed(e, key, output, j.now())
	if n := len(j.entrySlab); n < cap(j.entrySlab) && e == &j.entrySlab[:n+1][n] {
		// The slab takes the buffered entry as it is, indexed or not, so
		// that the buffer keeps ending at the slab's free room.
		j.entrySlab = j.entrySlab[:n+1]
		if p := j.slot(e); p != nil {
			*p = j.slabRef(n)
		}
	} else {
		j.Record(*e)
	}
	return *e, true, nil
}

// Carry buffers the result of an effect step (a model or tool call). It
// is written by the very next write of the drive,
// in the same call and transaction, ahead of what that write stores:
// usually the message append of the step right after it (the assistant
// message of a model call, the tool message of a tool call); decide steps
// in between (budget-check, guardrails with nothing to check) only buffer
// their results after it. The next effect's started entry carries it, an
// effect that writes no started entry flushes it first (the turn's
// runStep), and so does every decide step's external write (Flush). So
// the result is stored before any other effect happens or anything leaves
// the run — as when it is written alone — and a crash that loses it loses
// with it only what came after it: the call runs again with the same
// request id, as after a crash at its own write.
func (j *Journal) Carry(ctx context.Context, key, node string, output json.RawMessage) (bindings.JournalEntry, bool, error) {
	e, appended, err := j.BufferEntry(ctx, key, node, output)
	if err == nil {
		j.carried = true
	}
	return e, appended, err
}

// AppendMessage stores a message of the run after the buffered results,
// in one Commit (a message with no step entry: its step's entry is
// buffered after it). The user message's append also reads the history
// before it, historyLimit messages (0: none), when the buffer rides with
// it.
func (j *Journal) AppendMessage(ctx context.Context, in bindings.AppendMessageInput, historyLimit int) (bindings.ConversationMessage, error) {
	if j.deferred.set {
		// The message waiting for the next write goes first, alone.
		if err := j.Flush(ctx); err != nil {
			return bindings.ConversationMessage{}, err
		}
	}
	if err := j.CheckLease(); err != nil {
		return bindings.ConversationMessage{}, err
	}
	m := &journal.Message{Index: len(j.buf), Message: in}
	if historyLimit > 0 && len(j.buf) > 0 {
		m.HistoryLimit = historyLimit
	}
	res, err := j.commit(ctx, journal.CommitInput{Entries: j.buf, Message: m})
	if res.Entries != nil {
		// The entries were stored, whatever became of the message.
		if len(res.Entries) != len(j.buf) || len(res.Appended) != len(j.buf) {
			return res.Message, &agents.PersistenceError{Op: "append journal steps", Err: fmt.Errorf("%d entries written, %d returned", len(j.buf), len(res.Entries))}
		}
		if serr := j.stored(res.Entries, res.Appended); serr != nil {
			return res.Message, serr
		}
	}
	if err != nil {
		return res.Message, Coded(err, "append message")
	}
	if m.HistoryLimit > 0 {
		j.keepHistory(res.History, res.Message.Seq, m.HistoryLimit)
	}
	return res.Message, nil
}

// HoldLease makes sure the drive holds the run's lease before a side
// effect that is not preceded by a write of its own: it writes the buffer
// (Flush), whose write takes a pending lease as read, then takes a lease
// still pending alone, and opens a run still to be created (OpenPending).
// A drive that leased its run before it started finds nothing to do.
func (j *Journal) HoldLease(ctx context.Context) error {
	if err := j.Flush(ctx); err != nil {
		return err
	}
	if err := j.OpenPending(ctx); err != nil {
		return err
	}
	return j.CheckLease()
}

// Flush writes the buffered decide results, if any: it runs before every
// external side effect of a decide step (a message append, a provenance
// emit).
func (j *Journal) Flush(ctx context.Context) error {
	if len(j.buf) == 0 {
		return nil
	}
	if err := j.CheckLease(); err != nil {
		return err
	}
	_, _, err := j.writeEntries(ctx, j.buf)
	return err
}

// writeEntries writes entries — the buffer, possibly followed by one more
// — in one Commit, empties the buffer and indexes what the driver kept. A
// buffered entry the driver did not append means another driver wrote
// that step since this drive read the journal: the decisions this drive
// made from it are not the run's, so the drive stops with run-busy (the
// run stays resumable).
func (j *Journal) writeEntries(ctx context.Context, entries []bindings.JournalEntry) ([]bindings.JournalEntry, []bool, error) {
	if j.deferred.set {
		return j.writeDeferred(ctx, entries, "")
	}
	stored, appended, err := j.commitEntries(ctx, entries, "")
	if err != nil {
		return nil, nil, err
	}
	return stored, appended, j.stored(stored[:len(j.buf)], appended)
}

// stored indexes the written buffer and empties it.
func (j *Journal) stored(buffered []bindings.JournalEntry, appended []bool) error {
	j.buf = j.buf[:0]
	if j.carried {
		j.Inflight = "" // the carried result of the step in flight is stored
	}
	j.carried = false
	for i := range buffered {
		if !appended[i] {
			return &agents.RunBusyError{RunID: j.runID}
		}
		// Overwrite the provisional entry in place (it gains its Seq): no
		// allocation per entry. A driver that updated the buffer in place
		// (CommitInput.Trusted) updated the index's entry itself.
		if st := j.entries.get(buffered[i].Key); st != nil && st.Result != 0 && j.At(st.Result) != &buffered[i] {
			*j.At(st.Result) = buffered[i]
		}
	}
	return nil
}

// End closes the drive: it writes the buffered decide results and last
// (when set), the run's status, and releases the lease, in one Commit
// (with the deferred message, when one waits). When the write fails the
// status is left as it is and the lease held: the caller records what it
// must (a failure, an attempt) and releases it (best effort: an unreleased
// lease expires).
func (j *Journal) End(ctx context.Context, status bindings.RunStatus, last *bindings.JournalEntry) error {
	j.StopLease()
	entries := j.buf
	if last != nil {
		last.At = j.now()
		entries = append(j.bufTail(), *last)
	}
	n := len(j.buf)
	var stored []bindings.JournalEntry
	var err error
	if j.deferred.set {
		// The final message waits for this write: it goes with it.
		stored, _, err = j.writeDeferred(ctx, entries, status)
	} else {
		var appended []bool
		if stored, appended, err = j.commitEntries(ctx, entries, status); err == nil {
			err = j.stored(stored[:n], appended)
		}
	}
	if err != nil {
		return err // the lease is still held: the caller releases it
	}
	for i := n; i < len(stored); i++ {
		j.recordAt(&stored[i])
	}
	return nil
}

// maxAttemptMessage bounds the error message an attempt entry records.
const maxAttemptMessage = 1024

// NoteAttempt journals that the model or tool step in flight (Inflight)
// ends this drive without a stored result, after err, which leaves the run
// resumable: a failed entry under the step key, AttemptSep and the attempt
// number, with err's code and (shortened) message. It is best effort: when
// even this write fails, as after a crash, the attempt is not counted.
//
// Counting in the journal makes the bound of Bindings.MaxStepAttempts hold
// across processes; counting the attempts that failed, rather than writing
// one entry per start, keeps the journal of a run resumed after a crash
// the same as that of an uninterrupted run (the crash tests hold it so).
func (j *Journal) NoteAttempt(ctx context.Context, err error) {
	key, node := j.Inflight, j.InflightNode
	j.Inflight = ""
	st := j.entries.get(key)
	if key == "" || st == nil || (st.Result != 0 && j.At(st.Result).Seq != 0) {
		return
	}
	msg := err.Error()
	if len(msg) > maxAttemptMessage {
		cut := maxAttemptMessage
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	n := st.Attempts + 1
	se := &bindings.StepError{Code: agents.CodeOf(err), Message: msg}
	if _, _, werr := j.AppendEntry(ctx, key+AttemptSep+strconv.Itoa(n), node, bindings.StepFailed, nil, se); werr != nil && len(j.buf) > 0 {
		// The buffer may hold what the store refuses (the step's own
		// result): drop it, as a crash would (see BufferEntry), and count
		// the attempt alone.
		j.DropBuffer()
		_, _, _ = j.AppendEntry(ctx, key+AttemptSep+strconv.Itoa(n), node, bindings.StepFailed, nil, se)
	}
}

// Fail journals err as the failed outcome of key and returns err.
func (j *Journal) Fail(ctx context.Context, key, node string, err error) error {
	se, detail := EncodeFailure(err)
	e, appended, werr := j.AppendEntry(context.WithoutCancel(ctx), key, node, bindings.StepFailed, detail, se)
	if werr != nil {
		return werr
	}
	if j.Inflight == key {
		j.Inflight = ""
	}
	j.Failed = true
	if !appended && e.Status == bindings.StepFailed {
		// Another driver recorded this step first: its outcome is the one.
		return DecodeFailure(&e)
	}
	if !appended {
		return &agents.RunBusyError{RunID: j.runID}
	}
	return err
}
