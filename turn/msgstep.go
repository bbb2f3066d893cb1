package turn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/internal/journalcodec"
)

// deferredMessage is a message step whose append waits for the drive's
// next write, to be stored with it in one Commit (see deferMessage).
//
// The message itself is not copied here: it is r.appended[appended], where
// persist puts it before any write can happen (see message). Holding it
// once, and clearing only set once it is written, keeps the pointer words
// a message step writes few (each costs a write barrier while a GC mark
// runs).
type deferredMessage struct {
	set      bool
	key      string // the message step's key; its entry is in r.buf
	node     string
	appended int // its index in r.appended
	after    func(context.Context, bindings.ConversationMessage)
}

// message returns the append of the deferred message d, as persist was
// given it: the message persist returned for it (and appended to
// r.appended) has its fields, but for the Seq and CreatedAt the store
// gives it. ok is false when r.appended does not hold it (its step failed
// before persist appended it; then its entry is not buffered either).
func (r *run) message(d *deferredMessage) (in bindings.AppendMessageInput, ok bool) {
	if d.appended >= len(r.appended) {
		return in, false
	}
	m := &r.appended[d.appended]
	return bindings.AppendMessageInput{
		TenantID: m.TenantID, ConversationID: m.ConversationID, ID: m.ID, Role: m.Role, Content: m.Content,
		ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, TurnNumber: m.TurnNumber, RunID: m.RunID,
		ParticipantID: m.ParticipantID, Metadata: m.Metadata,
	}, true
}

// deferMessage defers the append of in, the message of step key, to the
// next write of the drive, which takes the message, the step's entry and
// the entries around it in one Commit: it reports whether it did,
// and then persist's step returns the message as it will be stored, but
// for its Seq and CreatedAt (which only the store gives it), and the step's
// entry is buffered without an output (the store sets it to the stored
// message).
//
// Why it is safe: the steps that run between the message step and the next
// write (the dispatch plan, budget-check, evaluate-guardrails with nothing
// to check, persist-provenance without an emitter, compose-result) decide
// from the message's content, never from its Seq or CreatedAt; the next
// write — the next effect's started entry, a park, a failure, the end of
// the drive, or a flush before any external write — stores the message
// and those entries together or not at all, so nothing outside the run
// sees a decision before the message is stored, and a crash before it
// loses what a crash at the message's own append loses. The message's
// events (after) are emitted once it is stored. The user message, whose
// Seq bounds the history read right after it, is deferred only with the
// history Open read ahead, stored on the condition
// that the conversation is still as read (see deferUserMessage).
func (r *run) deferMessage(ctx context.Context, key, node string, in bindings.AppendMessageInput, after func(context.Context, bindings.ConversationMessage)) (bool, error) {
	if key == NodePersistUserMessage && !r.deferUserMessage() {
		return false, nil
	}
	if r.deferred.set {
		// One message at a time: the one waiting is written first.
		if err := r.flush(ctx); err != nil {
			return false, err
		}
	}
	if err := r.checkLease(); err != nil {
		return false, err
	}
	r.deferred = deferredMessage{set: true, key: key, node: node, appended: len(r.appended), after: after}
	return true, nil
}

// deferredOutput reports whether step key is the deferred message step,
// whose output the store fills in.
func (r *run) deferredOutput(key string) bool { return r.deferred.set && r.deferred.key == key }

// encodeMessage is the journaled form of a stored message, as the message
// step's output (journal.Message.Encode).
// It takes the message by value, and leaves the rare fallback to
// marshalMessage, so that the caller's message stays on its stack.
func encodeMessage(m bindings.ConversationMessage) ([]byte, error) {
	if b, ok := journalcodec.Append(make([]byte, 0, messageSize(&m)), &m, nil); ok {
		return b, nil
	}
	return marshalMessage(m)
}

// encodeMessageInArena is encodeMessage writing into the drive's output
// arena, as encodeStep does for every other step output (the store keeps
// those bytes: the arena is never written over).
func (r *run) encodeMessageInArena(m bindings.ConversationMessage) ([]byte, error) {
	size := messageSize(&m)
	if cap(r.outArena)-len(r.outArena) < size {
		if size > outArenaSize/2 {
			return encodeMessage(m)
		}
		r.outArena = r.newOutArena()
	}
	start := len(r.outArena)
	b, ok := journalcodec.Append(r.outArena[start:start], &m, nil)
	if !ok {
		return marshalMessage(m)
	}
	if len(b) <= cap(r.outArena)-start {
		r.outArena = r.outArena[:start+len(b)]
		b = r.outArena[start:len(r.outArena):len(r.outArena)]
	}
	return b, nil
}

// messageSize is room enough for m's JSON: the names, ids, numbers and
// time fit in 512 bytes.
func messageSize(m *bindings.ConversationMessage) int {
	size := 512 + len(m.ID) + len(m.Content) + len(m.Metadata)
	for i := range m.ToolCalls {
		size += 48 + len(m.ToolCalls[i].ID) + len(m.ToolCalls[i].Name) + len(m.ToolCalls[i].Arguments)
	}
	return size
}

// marshalMessage is json.Marshal(m), what journalcodec.Append stands for.
func marshalMessage(m bindings.ConversationMessage) ([]byte, error) { return json.Marshal(m) }

// writeDeferred writes entries — the buffer, with the deferred message
// step's entry in it, possibly followed by one more entry — with the
// deferred message, in one Commit, finishing the run when
// finish is set; it empties the buffer and indexes what the store kept, as
// writeEntries does.
//
// When the store refuses the message (its conversation closed meanwhile),
// the entries before it are stored, as with a message appended at once;
// the decisions buffered after it are dropped (nothing outside the run saw
// them) and the message step's failure is journaled, which is the turn's
// outcome, as when the append failed in the step itself.
func (r *run) writeDeferred(ctx context.Context, entries []bindings.JournalEntry, finish bindings.RunStatus) ([]bindings.JournalEntry, []bool, error) {
	d := r.deferred
	at := -1
	for i := range r.buf {
		if r.buf[i].Key == d.key && r.buf[i].Status == bindings.StepCompleted {
			at = i
			break
		}
	}
	msg, ok := r.message(&d)
	if at < 0 || !ok {
		r.dropBuffer()
		return nil, nil, &agents.PersistenceError{Op: "append message step", Err: fmt.Errorf("the entry of step %s is not buffered", d.key)}
	}
	m := &r.msgIn // the run's own: no allocation per message step
	*m = journal.Message{Index: at, Message: msg, Encode: r.encodeMsg}
	user := d.key == NodePersistUserMessage && r.reads != nil && r.reads.userDeferred
	if user {
		// The user message, on the condition that the conversation is as
		// Open read it (see deferUserMessage).
		m.CheckCount, m.Count = true, r.reads.count
	}
	res, err := r.commit(ctx, journal.CommitInput{Entries: entries, Message: m, Finish: finish})
	if user {
		if errors.Is(err, bindings.ErrConversationChanged) {
			return r.writeUserMessageAgain(ctx, entries, at, finish)
		}
		if err == nil {
			r.reads.userDeferred = false
			if res.Message.Seq != int64(m.Count)+1 {
				return nil, nil, &agents.PersistenceError{Op: "append user message step", Err: fmt.Errorf("the message got seq %d, want %d", res.Message.Seq, m.Count+1)}
			}
		}
	}
	if err != nil {
		if res.Entries == nil {
			// Nothing stored: the deferred message stays for a retry.
			return nil, nil, coded(err, "append message step")
		}
		return nil, nil, r.refusedDeferred(ctx, at, res.Entries, res.Appended, err)
	}
	if len(res.Entries) != len(entries) || len(res.Appended) != len(entries) {
		return nil, nil, &agents.PersistenceError{Op: "append message step", Err: fmt.Errorf("%d entries written, %d returned", len(entries), len(res.Entries))}
	}
	r.deferred.set = false
	if d.appended < len(r.appended) && r.appended[d.appended].ID == res.Message.ID {
		copyMessage(&r.appended[d.appended], &res.Message) // with its Seq and CreatedAt
	}
	if d.key == NodePersistUserMessage {
		copyMessage(&r.userMsg, &res.Message) // the bound of the history reads after it
	}
	if err := r.stored(res.Entries[:len(r.buf)], res.Appended); err != nil {
		return nil, nil, err
	}
	if d.after != nil {
		d.after(ctx, res.Message)
	}
	return res.Entries, res.Appended, nil
}

// refusedDeferred handles a deferred message the store refused after
// storing the entries before it (stored): see writeDeferred.
func (r *run) refusedDeferred(ctx context.Context, at int, stored []bindings.JournalEntry, appended []bool, err error) error {
	if len(stored) != at || len(appended) != at {
		return &agents.PersistenceError{Op: "append message step", Err: fmt.Errorf("%d entries written, %d returned", at, len(stored))}
	}
	d := r.deferred
	r.deferred.set = false
	for _, e := range r.buf[at:] {
		// Not stored, and never to be: the index forgets them.
		if st := r.entries.get(e.Key); st != nil && st.result != 0 && r.at(st.result).Seq == 0 {
			st.result = 0
		}
	}
	r.buf = r.buf[:at]
	if d.appended < len(r.appended) {
		r.appended = r.appended[:d.appended] // its message, never stored
	}
	if serr := r.stored(stored, appended); serr != nil {
		return serr
	}
	err = coded(err, "append message")
	if !final(ctx, err) {
		return err
	}
	return r.fail(ctx, d.key, d.node, err)
}

// dropBuffer forgets the buffered results and the deferred message, as a
// crash would (see bufferEntry).
func (r *run) dropBuffer() {
	r.buf, r.carried = r.buf[:0], false
	r.deferred.set = false
}
