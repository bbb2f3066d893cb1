package turn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/internal/alias"
	"github.com/kindgi/agents/internal/journalcodec"
)

// keyState holds the journal entries of one step key, one per phase (see
// run.at), and for a model or tool step the number of its attempts that
// ended without a stored result (see noteAttempt).
type keyState struct {
	key                     string
	started, parked, result entryRef
	attempts                int
}

// entryRef names an entry the journal index holds: 0 none, n > 0 the n-th
// entry kept in the drive's entry slabs (record), n < 0 the -n-th of the
// entries read for the drive (loadJournal). A number, not a pointer: the
// key states of a pooled slab are written for every step of every drive,
// and a pointer word written costs a write barrier while a GC mark runs.
type entryRef int32

// entrySlabLen is the length of every entry slab: a turn's own entries,
// with one tool call (the pooled run's first slab is one).
const entrySlabLen = len(runMem{}.entries)

// at returns the entry ref names, nil for none.
func (r *run) at(ref entryRef) *bindings.JournalEntry {
	switch {
	case ref > 0:
		i := int(ref) - 1
		if k := i / entrySlabLen; k < len(r.fullSlabs) {
			return &r.fullSlabs[k][i%entrySlabLen]
		}
		return &r.entrySlab[i-len(r.fullSlabs)*entrySlabLen]
	case ref < 0:
		return &r.loaded[-int(ref)-1]
	}
	return nil
}

// slabRef is the ref of the entry slab's i-th entry.
func (r *run) slabRef(i int) entryRef {
	return entryRef(len(r.fullSlabs)*entrySlabLen + i + 1)
}

// attemptSep joins a step key and an attempt number into the key of the
// entry recording that attempt's failure: "agent-loop/1/model-call/attempt/2".
// No step key contains it (tool call ids in keys are path-escaped).
const attemptSep = "/attempt/"

// DefaultMaxStepAttempts is Bindings.MaxStepAttempts when it is zero.
const DefaultMaxStepAttempts = 5

// maxAttempts is Bindings.MaxStepAttempts or its default.
func (r *run) maxAttempts() int {
	if r.b.MaxStepAttempts > 0 {
		return r.b.MaxStepAttempts
	}
	return DefaultMaxStepAttempts
}

// maxAttemptMessage bounds the error message an attempt entry records.
const maxAttemptMessage = 1024

// noteAttempt journals that the model or tool step in flight (r.inflight)
// ends this drive without a stored result, after err, which leaves the run
// resumable: a failed entry under the step key, attemptSep and the attempt
// number, with err's code and (shortened) message. It is best effort: when
// even this write fails, as after a crash, the attempt is not counted.
//
// Counting in the journal makes the bound of Bindings.MaxStepAttempts hold
// across processes; counting the attempts that failed, rather than writing
// one entry per start, keeps the journal of a run resumed after a crash
// the same as that of an uninterrupted run (the crash tests hold it so).
func (r *run) noteAttempt(ctx context.Context, err error) {
	key, node := r.inflight, r.inflightNode
	r.inflight = ""
	st := r.entries.get(key)
	if key == "" || st == nil || (st.result != 0 && r.at(st.result).Seq != 0) {
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
	n := st.attempts + 1
	se := &bindings.StepError{Code: agents.CodeOf(err), Message: msg}
	if _, _, werr := r.appendEntry(ctx, key+attemptSep+strconv.Itoa(n), node, bindings.StepFailed, nil, se); werr != nil && len(r.buf) > 0 {
		// The buffer may hold what the store refuses (the step's own
		// result): drop it, as a crash would (see bufferEntry), and count
		// the attempt alone.
		r.dropBuffer()
		_, _, _ = r.appendEntry(ctx, key+attemptSep+strconv.Itoa(n), node, bindings.StepFailed, nil, se)
	}
}

// loadJournal indexes a run's entries by key and phase. The first entry of
// a (key, phase) wins, as the binding's idempotency rule says. The index
// points into entries, which are the run's own (read from the store for
// this drive): nothing is copied.
func (r *run) loadJournal(entries []bindings.JournalEntry) {
	if r.mem != nil && len(entries) <= len(r.mem.keys) {
		// The pooled slab, also for a resumed run's keys: an entry's started
		// and result phases share a key, and the index adds a slab of its
		// own once this one is full.
		r.entries = journalIndex{slab: r.mem.keys[:0]}
	} else {
		r.entries = newJournalIndex(len(entries) + 20) // room for a turn's own keys
	}
	if r.mem != nil {
		r.entrySlab = r.mem.entries[:0]
	}
	r.loaded = entries
	for i := range entries {
		if p := r.slot(&entries[i]); p != nil {
			*p = entryRef(-i - 1)
		}
	}
}

// record indexes one entry, a copy of e. The copies are carved from a slab
// (a pointer into a slab stays valid when a full slab is replaced by a new
// one), one allocation per slab instead of one per entry.
func (r *run) record(e bindings.JournalEntry) {
	if p := r.slot(&e); p != nil {
		*p = r.keep(e)
	}
}

// recordAt indexes the entry at e, as record does, without copying it
// when e is the entry slab's next free slot (see slabRoom): the slab then
// takes it as it is. Every entry a drive writes lands there first, so an
// entry is copied once on its way to the index (not into a buffer, then the
// slab, then again with its Seq), and each pointer word not copied is a
// write barrier less while a GC mark runs.
func (r *run) recordAt(e *bindings.JournalEntry) {
	p := r.slot(e)
	if p == nil {
		return
	}
	if n := len(r.entrySlab); n < cap(r.entrySlab) && e == &r.entrySlab[:n+1][n] {
		r.entrySlab = r.entrySlab[:n+1]
		*p = r.slabRef(n)
		return
	}
	*p = r.keep(*e)
}

// slabRoom returns an empty slice at the entry slab's free room (a new slab
// when this one is full): appending to it writes the slots the slab takes
// next, which is where the buffer and the entries written with it are built
// (see bufferEntry, appendEntry), so that recordAt finds them in place.
func (r *run) slabRoom() []bindings.JournalEntry {
	if len(r.entrySlab) == cap(r.entrySlab) {
		r.newSlab()
	}
	n := len(r.entrySlab)
	return r.entrySlab[n:n]
}

// newSlab replaces the full entry slab by a new one.
func (r *run) newSlab() {
	if cap(r.entrySlab) > 0 {
		r.fullSlabs = append(r.fullSlabs, r.entrySlab) // kept whole: refs name its entries
	}
	r.entrySlab = make([]bindings.JournalEntry, 0, entrySlabLen)
}

// bufTail returns the buffer, to append one entry to: at the entry slab's
// free room when it is empty. A buffer that is not empty already ends
// there (every entry buffered is kept in the slab at once, and nothing else
// is kept while the buffer holds entries) or is an array of its own, after
// a full slab was replaced (then its entries are copied, as before).
func (r *run) bufTail() []bindings.JournalEntry {
	if len(r.buf) == 0 {
		return r.slabRoom()
	}
	return r.buf
}

// bufSlot returns the buffer with one slot more (see bufTail), and that
// slot, which holds an earlier entry (the pooled slab's last drive's) or a
// zero one: the caller writes it with setEntry (bufferEntry then makes
// the longer buffer r.buf).
func (r *run) bufSlot() ([]bindings.JournalEntry, *bindings.JournalEntry) {
	b := r.bufTail()
	n := len(b)
	if n == cap(b) {
		b = append(b, bindings.JournalEntry{})
	}
	b = b[:n+1]
	return b, &b[n]
}

// setEntry makes *e the entry of those fields (Seq zero). It writes them
// one by one, skipping the key and the output when *e already holds them
// (the same bytes at the same address: the slot of a pooled slab usually
// holds the same step's entry of the drive before, its key the same
// string and its output at the same place in the reused arena; node and
// status are constants, whose words cost the barrier little).
// While a GC mark runs, every pointer word written costs a write barrier,
// and a JournalEntry copied whole costs the runtime's bulk one, several
// times dearer per word than the compiler's inline barrier of a field.
func setEntry(e *bindings.JournalEntry, key, node string, status bindings.StepStatus, output json.RawMessage, se *bindings.StepError, at time.Time) {
	e.Node, e.Status, e.Error = node, status, se
	setEntryKeyed(e, key, output, at)
}

// setEntryKeyed is setEntry of the Seq (zero), the key, the output and the
// time.
func setEntryKeyed(e *bindings.JournalEntry, key string, output json.RawMessage, at time.Time) {
	e.Seq, e.At = 0, at
	if !sameString(e.Key, key) {
		e.Key = key
	}
	if !alias.SameBytes(e.Output, output) {
		e.Output = output
	}
}

// sameString reports whether a and b are the same string: the same bytes
// at the same address (not only equal bytes: a string may alias bytes a
// later drive writes over, such as a derived id's).
func sameString(a, b string) bool { return alias.SameString(a, b) }

// slot returns where the index keeps e: the phase of e's key state that
// has no entry yet, or nil when it has one already (or when e is a failed
// attempt of a step, which only counts the attempt).
func (r *run) slot(e *bindings.JournalEntry) *entryRef {
	if e.Status == bindings.StepFailed {
		if i := strings.LastIndex(e.Key, attemptSep); i >= 0 {
			if n, err := strconv.Atoi(e.Key[i+len(attemptSep):]); err == nil {
				// A failed attempt of step e.Key[:i] (noteAttempt).
				st := r.state(e.Key[:i])
				st.attempts = max(st.attempts, n)
				return nil
			}
		}
	}
	st := r.state(e.Key)
	p := &st.result
	switch e.Status.Phase() {
	case string(bindings.StepStarted):
		p = &st.started
	case string(bindings.StepParked):
		p = &st.parked
	}
	if *p != 0 {
		return nil
	}
	return p
}

// state returns the key state of key, made on first use.
func (r *run) state(key string) *keyState {
	st := r.entries.get(key)
	if st == nil {
		st = r.entries.add(key)
	}
	return st
}

// keep stores e in the entry slab and returns its ref.
func (r *run) keep(e bindings.JournalEntry) entryRef {
	r.slabRoom()
	r.entrySlab = append(r.entrySlab, e)
	return r.slabRef(len(r.entrySlab) - 1)
}

// requestID is the deterministic request id of a step: the same on every
// retry of the step, in any process (see derivedID).
func (r *run) requestID(key string) string { return r.derivedID(key) }

// appendEntry writes one journal entry at once, under the driver's lease,
// and indexes what the driver kept (the first entry of that key and
// phase). The decide results buffered before it are written in the same
// Commit, ahead of it.
func (r *run) appendEntry(ctx context.Context, key, node string, status bindings.StepStatus, output json.RawMessage, se *bindings.StepError) (bindings.JournalEntry, bool, error) {
	if r.replaying {
		return bindings.JournalEntry{}, false, &agents.RunJournalUnavailableError{RunID: r.id, Err: fmt.Errorf("the finished run's journal has no result for step %s", key)}
	}
	if err := r.checkLease(); err != nil {
		return bindings.JournalEntry{}, false, err
	}
	entries, e := r.bufSlot() // the buffer and e after it, not buffered
	setEntry(e, key, node, status, output, se, r.now())
	stored, appended, err := r.writeEntries(ctx, entries)
	if err != nil {
		return bindings.JournalEntry{}, false, err
	}
	last := len(stored) - 1
	r.recordAt(&stored[last]) // in place when the driver updated e there (CommitInput.Trusted)
	return stored[last], appended[last], nil
}

// bufferEntry records the completed outcome of a decide step. It is only
// buffered: it is written with the next entry that must be written at
// once (a started marker, an effect step's result, a park, a failure), by
// flush before the next external side effect, or by the end of the drive
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
// again after a crash writes the buffer first: holdLease); every
// message append and provenance emit runs flush first; the run's status
// changes and the return to the caller come after the buffer is written.
// So a resumed drive finds those steps without a result and runs them
// again: a read-and-decide step decides afresh (possibly differently, say
// a later now, but nothing was done with the lost decision), and an
// idempotent write stores nothing twice and returns what it stored.
func (r *run) bufferEntry(ctx context.Context, key, node string, output json.RawMessage) (bindings.JournalEntry, bool, error) {
	if r.replaying {
		return bindings.JournalEntry{}, false, &agents.RunJournalUnavailableError{RunID: r.id, Err: fmt.Errorf("the finished run's journal has no result for step %s", key)}
	}
	if err := r.checkLease(); err != nil {
		return bindings.JournalEntry{}, false, err
	}
	var e *bindings.JournalEntry
	if n := len(r.buf); n > 0 && n < cap(r.buf) {
		r.buf = r.buf[:n+1] // the same array: no pointer word written
		e = &r.buf[n]
	} else {
		var b []bindings.JournalEntry
		b, e = r.bufSlot()
		r.buf = b
	}
	// As setEntry, and the node, status and error too only when the slot
	// does not hold them (setEntry, inlined, leaves them to this caller).
	if !sameString(e.Node, node) {
		e.Node = node
	}
	if !sameString(string(e.Status), string(bindings.StepCompleted)) {
		e.Status = bindings.StepCompleted
	}
	if e.Error != nil {
		e.Error = nil
	}
	setEntryKeyed(e, key, output, r.now())
	if n := len(r.entrySlab); n < cap(r.entrySlab) && e == &r.entrySlab[:n+1][n] {
		// The slab takes the buffered entry as it is, indexed or not, so
		// that the buffer keeps ending at the slab's free room.
		r.entrySlab = r.entrySlab[:n+1]
		if p := r.slot(e); p != nil {
			*p = r.slabRef(n)
		}
	} else {
		r.record(*e)
	}
	return *e, true, nil
}

// carry buffers the result of an effect step (a model or tool call). It
// is written by the very next write of the drive,
// in the same call and transaction, ahead of what that write stores:
// usually the message append of the step right after it (the assistant
// message of a model call, the tool message of a tool call); decide steps
// in between (budget-check, guardrails with nothing to check) only buffer
// their results after it. The next effect's started entry carries it, an
// effect that writes no started entry flushes it first (runStep), and so
// does every decide step's external write (flush). So the result is stored
// before any other effect happens or anything leaves the run — as when it
// is written alone — and a crash that loses it loses with it only what
// came after it: the call runs again with the same request id, as after a
// crash at its own write.
func (r *run) carry(ctx context.Context, key, node string, output json.RawMessage) (bindings.JournalEntry, bool, error) {
	e, appended, err := r.bufferEntry(ctx, key, node, output)
	if err == nil {
		r.carried = true
	}
	return e, appended, err
}

// appendMessage stores a message of the run after the buffered results,
// in one Commit (a message with no step entry: its step's entry is
// buffered after it). The user message's append also reads the history
// before it (wantHistory), when the buffer rides with it.
func (r *run) appendMessage(ctx context.Context, in bindings.AppendMessageInput) (bindings.ConversationMessage, error) {
	if r.deferred.set {
		// The message waiting for the next write goes first, alone.
		if err := r.flush(ctx); err != nil {
			return bindings.ConversationMessage{}, err
		}
	}
	if err := r.checkLease(); err != nil {
		return bindings.ConversationMessage{}, err
	}
	m := &journal.Message{Index: len(r.buf), Message: in}
	if r.wantHistory && r.s.HistoryLimit > 0 && len(r.buf) > 0 {
		m.HistoryLimit = r.s.HistoryLimit
	}
	res, err := r.commit(ctx, journal.CommitInput{Entries: r.buf, Message: m})
	if res.Entries != nil {
		// The entries were stored, whatever became of the message.
		if len(res.Entries) != len(r.buf) || len(res.Appended) != len(r.buf) {
			return res.Message, &agents.PersistenceError{Op: "append journal steps", Err: fmt.Errorf("%d entries written, %d returned", len(r.buf), len(res.Entries))}
		}
		if serr := r.stored(res.Entries, res.Appended); serr != nil {
			return res.Message, serr
		}
	}
	if err != nil {
		return res.Message, coded(err, "append message")
	}
	if m.HistoryLimit > 0 {
		r.keepHistory(res.History, res.Message.Seq)
	}
	return res.Message, nil
}

// holdLease makes sure the drive holds the run's lease before a side
// effect that is not preceded by a write of its own: it writes the buffer
// (flush), whose write takes a pending lease as read, then takes a lease
// still pending alone, and opens a run still to be created (openPending).
// A drive that leased its run before it started finds nothing to do.
func (r *run) holdLease(ctx context.Context) error {
	if err := r.flush(ctx); err != nil {
		return err
	}
	if err := r.openPending(ctx); err != nil {
		return err
	}
	return r.checkLease()
}

// flush writes the buffered decide results, if any: it runs before every
// external side effect of a decide step (a message append, a provenance
// emit).
func (r *run) flush(ctx context.Context) error {
	if len(r.buf) == 0 {
		return nil
	}
	if err := r.checkLease(); err != nil {
		return err
	}
	_, _, err := r.writeEntries(ctx, r.buf)
	return err
}

// writeEntries writes entries — the buffer, possibly followed by one more
// — in one Commit, empties the buffer and indexes what the driver kept. A
// buffered entry the driver did not append means another driver wrote
// that step since this drive read the journal: the decisions this drive
// made from it are not the run's, so the drive stops with run-busy (the
// run stays resumable).
func (r *run) writeEntries(ctx context.Context, entries []bindings.JournalEntry) ([]bindings.JournalEntry, []bool, error) {
	if r.deferred.set {
		return r.writeDeferred(ctx, entries, "")
	}
	stored, appended, err := r.commitEntries(ctx, entries, "")
	if err != nil {
		return nil, nil, err
	}
	return stored, appended, r.stored(stored[:len(r.buf)], appended)
}

// stored indexes the written buffer and empties it.
func (r *run) stored(buffered []bindings.JournalEntry, appended []bool) error {
	r.buf = r.buf[:0]
	if r.carried {
		r.inflight = "" // the carried result of the step in flight is stored
	}
	r.carried = false
	for i := range buffered {
		if !appended[i] {
			return &agents.RunBusyError{RunID: r.id}
		}
		// Overwrite the provisional entry in place (it gains its Seq): no
		// allocation per entry. A driver that updated the buffer in place
		// (CommitInput.Trusted) updated the index's entry itself.
		if st := r.entries.get(buffered[i].Key); st != nil && st.result != 0 && r.at(st.result) != &buffered[i] {
			*r.at(st.result) = buffered[i]
		}
	}
	return nil
}

// step runs a node's side effect at most once per run: it is the only way
// the turn performs one.
//
//   - A completed entry for key is decoded and returned without running fn;
//     a failed one returns its recorded coded error.
//   - A started entry without a result (the driver died mid-step) runs fn
//     again with the same request id, once the drive holds the run's
//     lease (holdLease): a resumer that lost the run calls nothing.
//   - Otherwise step appends started, runs fn, and appends completed with
//     fn's output as JSON, or failed with fn's coded error.
//
// An error that is not the step's own outcome — a storage failure, a lost
// lease, a cancelled context — is returned without being journaled, so the
// run can continue later from this step.
func step[T any](ctx context.Context, r *run, key, node string, fn func(ctx context.Context, requestID string) (T, error)) (T, error) {
	return runStep(ctx, r, key, node, kindEffect, fn)
}

// decide is step for a node whose effect is safe to repeat: one that only
// reads and decides (setup, rendering, retrieval, planning, budget checks,
// composing the result) or writes idempotently under a deterministic key
// (a message under its id, provenance under the run id). Its outcome is
// journaled the same way, but without a started entry first: running it
// again after a crash changes nothing. Model calls, tool calls and
// guardrail checks (which may ask a model) use step, so a journal shows
// which of them were in flight when a driver died. A decide step calls
// nobody, so fn gets an empty request id (none is built for it).
func decide[T any](ctx context.Context, r *run, key, node string, fn func(ctx context.Context, requestID string) (T, error)) (T, error) {
	return runStep(ctx, r, key, node, kindDecide, fn)
}

// stepKind says how runStep journals a step.
type stepKind int

const (
	// kindDecide: no started entry; the result is buffered (bufferEntry).
	kindDecide stepKind = iota
	// kindEffect: a started entry first; the result is carried by the
	// drive's next write (see carry).
	kindEffect
	// kindMessage: a decide step whose effect is a message append through
	// r.appendMessage, which writes the buffer in the same call; its fn
	// gets the message id as its request id.
	kindMessage
)

func runStep[T any](ctx context.Context, r *run, key, node string, kind stepKind, fn func(ctx context.Context, requestID string) (T, error)) (T, error) {
	effect := kind == kindEffect
	var zero T
	st := r.entries.get(key)
	if st != nil && st.result != 0 {
		var out T
		var err error
		if p, ok := any(r.setupDecoded).(*T); ok && p != nil && key == NodeSetup {
			out, r.setupDecoded = *p, nil // decoded from this entry by recheckRoute; used once
		} else {
			e := r.at(st.result)
			out, err = decodeOutcome[T](e, r.inPlace(e))
		}
		if err != nil && r.at(st.result).Status == bindings.StepFailed {
			r.failed = true
		}
		if r.logger != nil {
			r.logReplayed(ctx, key, node, string(r.at(st.result).Status))
		}
		return out, err
	}
	if r.replaying {
		return zero, &agents.RunJournalUnavailableError{RunID: r.id, Err: fmt.Errorf("the finished run's journal has no result for step %s", key)}
	}
	if err := r.live(ctx); err != nil {
		return zero, err
	}
	if err := r.loadMessages(); err != nil { // a step that runs may read them
		return zero, err
	}
	if effect && st != nil && st.started != 0 {
		// The effect was in flight when a driver died: it runs again
		// without writing a started entry, so nothing written so far
		// need have taken this drive's lease (an optimistic resume or
		// open takes it with its first write). Hold it before the call:
		// write the buffer — the decisions made since the read, and an
		// earlier effect's carried result, which must be stored before
		// another effect starts — which takes the lease as read, or take
		// the lease alone when nothing waits. A drive that lost the race
		// stops here, run-busy, having called nothing. (A decide step
		// leaves the buffer as it is: it has no effect outside the run,
		// its own result is buffered after it, and both go with the next
		// write, in order.)
		if err := r.holdLease(ctx); err != nil {
			return zero, err
		}
	}
	if effect {
		if st == nil || st.started == 0 {
			if _, _, err := r.appendEntry(ctx, key, node, bindings.StepStarted, nil, nil); err != nil {
				return zero, err
			}
		} else if n := st.attempts; n >= r.maxAttempts() {
			// The step failed this often without a result: the failure
			// recurs, and calling again would only repeat (and bill) it.
			return zero, r.fail(ctx, key, node, &agents.StepAttemptsExhaustedError{RunID: r.id, StepKey: key, Attempts: n})
		}
		r.inflight, r.inflightNode = key, node
	}
	if r.b.OnEvent != nil {
		emit(r, ctx, NodeStartedEvent{RunID: r.id, Node: node, Key: key})
	}
	var start time.Time
	if r.logger != nil {
		start = time.Now()
	}
	var requestID string
	switch kind {
	case kindEffect:
		requestID = r.requestID(key)
	case kindMessage:
		requestID = r.messageID(key) // persist's fn takes it as the message id
	}
	var out T
	var err error
	if effect {
		out, err = callEffect(ctx, r, node, requestID, fn)
	} else {
		out, err = fn(ctx, requestID)
	}
	if r.logger != nil {
		r.logStep(ctx, key, node, start, out, err)
	}
	if r.b.OnEvent != nil {
		emit(r, ctx, NodeCompletedEvent{RunID: r.id, Node: node, Key: key, Code: agents.CodeOf(err)})
	}
	if err != nil {
		if !final(ctx, err) {
			return zero, err
		}
		return zero, r.fail(ctx, key, node, err)
	}
	var raw []byte
	if !r.deferredOutput(key) { // a deferred message's output is the store's to fill
		raw, err = encodeStep(r, &out)
	}
	if err != nil {
		return zero, &agents.PersistenceError{Op: "encode step " + key, Err: err, Permanent: true}
	}
	var e bindings.JournalEntry
	var appended bool
	switch {
	case effect:
		e, appended, err = r.carry(ctx, key, node, raw)
	default:
		e, appended, err = r.bufferEntry(ctx, key, node, raw)
	}
	if err != nil {
		return zero, err
	}
	if !appended {
		// Another driver recorded this step first: its result is the one.
		return decodeResult[T](&e)
	}
	return out, nil
}

// callEffect runs the body of a model or tool step. A panic in it (a
// provider, tool or check that panics) is counted as a failed attempt of
// the step (noteAttempt) and goes on: the drive still ends with the panic,
// but a step that panics on every drive ends the run after
// Bindings.MaxStepAttempts drives, as any recurring failure does.
func callEffect[T any](ctx context.Context, r *run, node, requestID string, fn func(ctx context.Context, requestID string) (T, error)) (T, error) {
	defer func() {
		if p := recover(); p != nil {
			msg := fmt.Sprintf("the step panicked: %v", p)
			var err error
			switch node {
			case NodeModelCall:
				err = &agents.ModelInvocationError{Provider: r.s.Route.Provider, Model: r.s.Route.Model, Message: msg}
			case NodeEvaluateGuardrails:
				err = &agents.GuardrailViolationError{Reason: msg}
			default:
				err = &agents.ToolInvocationError{Message: msg}
			}
			r.noteAttempt(context.WithoutCancel(ctx), err)
			panic(p)
		}
	}()
	return fn(ctx, requestID)
}

// journaled returns raw as the journal stores it: encoding/json compacts
// (and HTML-escapes) a json.RawMessage it encodes. A step's output is used
// in this form on the drive that produced it too, so a replay sees the very
// same bytes.
func journaled(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || !journalcodec.NeedsCompact(raw) {
		// Nothing to remove or escape: the encoder would copy raw as it
		// is (or, were it not JSON, fail and leave raw as it is).
		return raw
	}
	out, err := json.Marshal(raw)
	if err != nil {
		return raw
	}
	return out
}

// fail journals err as the failed outcome of key and returns err.
func (r *run) fail(ctx context.Context, key, node string, err error) error {
	se, detail := encodeFailure(err)
	e, appended, werr := r.appendEntry(context.WithoutCancel(ctx), key, node, bindings.StepFailed, detail, se)
	if werr != nil {
		return werr
	}
	if r.inflight == key {
		r.inflight = ""
	}
	r.failed = true
	if !appended && e.Status == bindings.StepFailed {
		// Another driver recorded this step first: its outcome is the one.
		return decodeFailure(&e)
	}
	if !appended {
		return &agents.RunBusyError{RunID: r.id}
	}
	return err
}

// decodeResult returns the outcome a result entry recorded.
func decodeResult[T any](e *bindings.JournalEntry) (T, error) { return decodeOutcome[T](e, false) }

// decodeOutcome is decodeResult; shared says no one ever writes e's output
// (r.inPlace(e)), which is then decoded in place (unmarshalIn).
func decodeOutcome[T any](e *bindings.JournalEntry, shared bool) (T, error) {
	var out T
	err := decodeOutcomeInto(e, shared, &out)
	return out, err
}

// decodeOutcomeInto is decodeOutcome into *out, which is zero: the
// decoders write its fields in place.
func decodeOutcomeInto[T any](e *bindings.JournalEntry, shared bool, out *T) error {
	if e.Status == bindings.StepFailed {
		return decodeFailure(e)
	}
	if len(e.Output) > 0 {
		if err := unmarshalIn(e.Output, out, shared); err != nil {
			return &agents.RunJournalUnavailableError{Err: fmt.Errorf("decode step %s: %w", e.Key, err)}
		}
	}
	return nil
}

// final reports whether err is a step's own outcome, to be journaled as
// failed: a coded error other than the storage and lease errors, with the
// driver's context still live.
func final(ctx context.Context, err error) bool {
	if ctx.Err() != nil || isDriverFault(err) || isQuotaWait(err) {
		return false
	}
	switch agents.CodeOf(err) {
	case "", agents.CodePersistence, agents.CodeRunBusy, agents.CodeRunJournalUnavailable,
		agents.CodeRunSnapshotMissing:
		return false
	}
	return true
}

// coded returns err when it carries a code, and a *agents.PersistenceError
// naming op otherwise.
func coded(err error, op string) error {
	if agents.CodeOf(err) != "" {
		return err
	}
	return &agents.PersistenceError{Op: op, Err: err}
}

// failureDetail is the JSON stored in a failed entry's Output: the error's
// exported fields (Detail) and the text of its cause.
type failureDetail struct {
	Detail json.RawMessage `json:"detail,omitempty"`
	Cause  string          `json:"cause,omitempty"`
}

// encodeFailure turns a coded error into a StepError and the detail that
// decodeFailure rebuilds the typed error from.
func encodeFailure(err error) (*bindings.StepError, json.RawMessage) {
	se := &bindings.StepError{Code: agents.CodeOf(err), Message: err.Error()}
	var c agents.Coder
	if !errors.As(err, &c) {
		return se, nil
	}
	var fd failureDetail
	if raw, mErr := json.Marshal(c); mErr == nil {
		var fields map[string]json.RawMessage
		if json.Unmarshal(raw, &fields) == nil {
			delete(fields, "Err")
			fd.Detail, _ = json.Marshal(fields)
		}
	}
	if cause := errors.Unwrap(c); cause != nil {
		fd.Cause = cause.Error()
	}
	out, _ := json.Marshal(fd)
	return se, out
}

// decodeFailure rebuilds the typed error a failed entry recorded, so that
// errors.As and agents.CodeOf see the same error on every replay.
func decodeFailure(e *bindings.JournalEntry) error {
	se := e.Error
	if se == nil {
		se = &bindings.StepError{Code: agents.CodePersistence, Message: "failed step " + e.Key + " recorded no error"}
	}
	var fd failureDetail
	_ = json.Unmarshal(e.Output, &fd)
	var cause error
	if fd.Cause != "" {
		cause = errors.New(fd.Cause)
	}
	target := newCoded(se.Code, cause)
	if target == nil {
		return &replayedError{code: se.Code, msg: se.Message}
	}
	if len(fd.Detail) > 0 {
		if err := json.Unmarshal(fd.Detail, target); err != nil {
			return &replayedError{code: se.Code, msg: se.Message}
		}
	}
	return target
}

// newCoded returns a zero error of the type that carries code, with its
// cause set, or nil for a code it does not know.
func newCoded(code string, cause error) error {
	switch code {
	case agents.CodeInvalidAgent:
		return &agents.InvalidAgentError{}
	case agents.CodeAgentVersionMismatch:
		return &agents.AgentVersionMismatchError{}
	case agents.CodeConversationNotFound:
		return &agents.ConversationNotFoundError{}
	case agents.CodeConversationClosed:
		return &agents.ConversationClosedError{}
	case agents.CodeConversationBusy:
		return &agents.ConversationBusyError{}
	case agents.CodeInvalidMessage:
		return &agents.InvalidMessageError{}
	case agents.CodeMissingParameter:
		return &agents.MissingParameterError{}
	case agents.CodeRenderFailure:
		return &agents.RenderFailureError{Err: cause}
	case agents.CodeUnresolvedTool:
		return &agents.UnresolvedToolError{}
	case agents.CodeToolVersionUnresolvable:
		return &agents.ToolVersionUnresolvableError{}
	case agents.CodeCapabilityRoutingFailed:
		return &agents.CapabilityRoutingError{}
	case agents.CodeModelInvocationFailed:
		return &agents.ModelInvocationError{Err: cause}
	case agents.CodeToolInvocationFailed:
		return &agents.ToolInvocationError{Err: cause}
	case agents.CodeBudgetExceeded:
		return &agents.BudgetExceededError{}
	case agents.CodeTurnAborted:
		return &agents.TurnAbortedError{Err: cause}
	case agents.CodeHitlRequired:
		return &agents.HitlRequiredError{}
	case agents.CodeGuardrailViolation:
		return &agents.GuardrailViolationError{}
	case agents.CodeUnresolvedGuardrail:
		return &agents.UnresolvedGuardrailError{}
	case agents.CodeTenantPolicyUnavailable:
		return &agents.TenantPolicyUnavailableError{Err: cause}
	case agents.CodeRunInputMismatch:
		return &agents.RunInputMismatchError{}
	case agents.CodeStepAttemptsExhausted:
		return &agents.StepAttemptsExhaustedError{}
	case agents.CodePersistence:
		return &agents.PersistenceError{Err: cause}
	case agents.CodeInvalidOutput:
		return &agents.InvalidOutputError{}
	case agents.CodeInvalidBindings:
		return &agents.InvalidBindingsError{}
	case agents.CodeApprovalNotFound:
		return &agents.ApprovalNotFoundError{}
	case agents.CodeQuotaExceeded:
		return &agents.QuotaExceededError{}
	}
	return nil
}

// replayedError is a recorded failure whose code has no type of its own.
type replayedError struct {
	code, msg string
}

// Error returns the recorded message.
func (e *replayedError) Error() string { return e.msg }

// Code returns the recorded code.
func (e *replayedError) Code() string { return e.code }
