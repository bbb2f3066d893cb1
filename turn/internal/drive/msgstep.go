package drive

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
// next write, to be stored with it in one Commit (see DeferMessage).
//
// The message itself is not copied here: it is the turn's appended
// message number appended (Flow.Appended), where the turn puts it
// before any write can happen. Holding it once, and clearing only set once
// it is written, keeps the pointer words a message step writes few (each
// costs a write barrier while a GC mark runs).
type deferredMessage struct {
	set      bool
	user     bool   // the user message (see DeferUserMessage)
	key      string // the message step's key; its entry is in j.buf
	node     string
	appended int // its index in the turn's appended messages
	after    func(context.Context, bindings.ConversationMessage)
}

// DeferMessage defers the append of the turn's appended message number
// appended, the message of step key, to the next write of the drive, which
// takes the message, the step's entry and the entries around it in one
// Commit; user says it is the user message, which the caller deferred
// only when DeferUserMessage said it may be. The turn's message step then
// returns the message as it will be stored, but for its Seq and CreatedAt
// (which only the store gives it), and the step's entry is buffered
// without an output (the store sets it to the stored message).
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
// history Open read ahead, stored on the condition that the conversation
// is still as read (see DeferUserMessage).
func (j *Journal) DeferMessage(ctx context.Context, key, node string, user bool, appended int, after func(context.Context, bindings.ConversationMessage)) error {
	if j.deferred.set {
		// One message at a time: the one waiting is written first.
		if err := j.Flush(ctx); err != nil {
			return err
		}
	}
	if err := j.CheckLease(); err != nil {
		return err
	}
	j.deferred = deferredMessage{set: true, user: user, key: key, node: node, appended: appended, after: after}
	return nil
}

// message returns the append of the deferred message d, as the turn's
// message step was given it: the message it returned for it (and appended
// to the turn's messages) has its fields, but for the Seq and CreatedAt
// the store gives it. ok is false when the turn does not hold it (its step
// failed before it appended it; then its entry is not buffered either).
func (j *Journal) message(d *deferredMessage) (in bindings.AppendMessageInput, ok bool) {
	m := j.flow.Appended(d.appended)
	if m == nil {
		return in, false
	}
	return bindings.AppendMessageInput{
		TenantID: m.TenantID, ConversationID: m.ConversationID, ID: m.ID, Role: m.Role, Content: m.Content,
		ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, TurnNumber: m.TurnNumber, RunID: m.RunID,
		ParticipantID: m.ParticipantID, Metadata: m.Metadata,
	}, true
}

// messageStored gives the turn the stored form of the deferred message d,
// m, and for the user message the bound of the history reads after it.
func (j *Journal) messageStored(d *deferredMessage, m *bindings.ConversationMessage) {
	if p := j.flow.Appended(d.appended); p != nil && p.ID == m.ID {
		CopyMessage(p, m)
	}
	if d.user {
		CopyMessage(j.flow.UserMessage(), m)
	}
}

// CopyMessage sets *dst to *src field by field: while a GC mark runs, a
// message copied whole costs the runtime's bulk write barrier, several
// times dearer per word than the compiler's inline barrier of a field.
func CopyMessage(dst, src *bindings.ConversationMessage) {
	dst.TenantID, dst.ConversationID, dst.ID, dst.Seq, dst.Role = src.TenantID, src.ConversationID, src.ID, src.Seq, src.Role
	dst.Content, dst.ToolCalls, dst.ToolCallID, dst.TurnNumber = src.Content, src.ToolCalls, src.ToolCallID, src.TurnNumber
	dst.RunID, dst.ParticipantID, dst.Metadata, dst.CreatedAt = src.RunID, src.ParticipantID, src.Metadata, src.CreatedAt
}

// DeferredOutput reports whether step key is the deferred message step,
// whose output the store fills in.
func (j *Journal) DeferredOutput(key string) bool { return j.deferred.set && j.deferred.key == key }

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
// arena, as EncodeStep does for every other step output (the store keeps
// those bytes: the arena is never written over).
func (j *Journal) encodeMessageInArena(m bindings.ConversationMessage) ([]byte, error) {
	size := messageSize(&m)
	if cap(j.outArena)-len(j.outArena) < size {
		if size > outArenaSize/2 {
			return encodeMessage(m)
		}
		j.outArena = j.newOutArena()
	}
	start := len(j.outArena)
	b, ok := journalcodec.Append(j.outArena[start:start], &m, nil)
	if !ok {
		return marshalMessage(m)
	}
	if len(b) <= cap(j.outArena)-start {
		j.outArena = j.outArena[:start+len(b)]
		b = j.outArena[start:len(j.outArena):len(j.outArena)]
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
func (j *Journal) writeDeferred(ctx context.Context, entries []bindings.JournalEntry, finish bindings.RunStatus) ([]bindings.JournalEntry, []bool, error) {
	d := j.deferred
	at := -1
	for i := range j.buf {
		if j.buf[i].Key == d.key && j.buf[i].Status == bindings.StepCompleted {
			at = i
			break
		}
	}
	msg, ok := j.message(&d)
	if at < 0 || !ok {
		j.DropBuffer()
		return nil, nil, &agents.PersistenceError{Op: "append message step", Err: fmt.Errorf("the entry of step %s is not buffered", d.key)}
	}
	m := &j.msgIn // the drive's own: no allocation per message step
	*m = journal.Message{Index: at, Message: msg, Encode: j.encodeMsg}
	user := d.user && j.Reads != nil && j.Reads.userDeferred
	if user {
		// The user message, on the condition that the conversation is as
		// Open read it (see DeferUserMessage).
		m.CheckCount, m.Count = true, j.Reads.count
	}
	res, err := j.commit(ctx, journal.CommitInput{Entries: entries, Message: m, Finish: finish})
	if user {
		if errors.Is(err, bindings.ErrConversationChanged) {
			return j.writeUserMessageAgain(ctx, entries, at, finish)
		}
		if err == nil {
			j.Reads.userDeferred = false
			if res.Message.Seq != int64(m.Count)+1 {
				return nil, nil, &agents.PersistenceError{Op: "append user message step", Err: fmt.Errorf("the message got seq %d, want %d", res.Message.Seq, m.Count+1)}
			}
		}
	}
	if err != nil {
		if res.Entries == nil {
			// Nothing stored: the deferred message stays for a retry.
			return nil, nil, Coded(err, "append message step")
		}
		return nil, nil, j.refusedDeferred(ctx, at, res.Entries, res.Appended, err)
	}
	if len(res.Entries) != len(entries) || len(res.Appended) != len(entries) {
		return nil, nil, &agents.PersistenceError{Op: "append message step", Err: fmt.Errorf("%d entries written, %d returned", len(entries), len(res.Entries))}
	}
	j.deferred.set = false
	j.messageStored(&d, &res.Message) // with its Seq and CreatedAt
	if err := j.stored(res.Entries[:len(j.buf)], res.Appended); err != nil {
		return nil, nil, err
	}
	if d.after != nil {
		d.after(ctx, res.Message)
	}
	return res.Entries, res.Appended, nil
}

// refusedDeferred handles a deferred message the store refused after
// storing the entries before it (stored): see writeDeferred.
func (j *Journal) refusedDeferred(ctx context.Context, at int, stored []bindings.JournalEntry, appended []bool, err error) error {
	if len(stored) != at || len(appended) != at {
		return &agents.PersistenceError{Op: "append message step", Err: fmt.Errorf("%d entries written, %d returned", at, len(stored))}
	}
	d := j.deferred
	j.deferred.set = false
	for _, e := range j.buf[at:] {
		// Not stored, and never to be: the index forgets them.
		if st := j.entries.get(e.Key); st != nil && st.Result != 0 && j.At(st.Result).Seq == 0 {
			st.Result = 0
		}
	}
	j.buf = j.buf[:at]
	j.flow.MessageRefused(d.appended) // its message, never stored
	if serr := j.stored(stored, appended); serr != nil {
		return serr
	}
	err = Coded(err, "append message")
	if !j.flow.Final(ctx, err) {
		return err
	}
	return j.Fail(ctx, d.key, d.node, err)
}

// DropBuffer forgets the buffered results and the deferred message, as a
// crash would (see BufferEntry).
func (j *Journal) DropBuffer() {
	j.buf, j.carried = j.buf[:0], false
	j.deferred.set = false
}

// AppendMessage appends a copy of *m to *list (CopyMessage, never a whole
// copy), with room for four messages at first (a turn with one tool call
// stores four).
func AppendMessage(list *[]bindings.ConversationMessage, m *bindings.ConversationMessage) {
	if *list == nil {
		*list = make([]bindings.ConversationMessage, 0, 4)
	}
	n := len(*list)
	if n == cap(*list) {
		*list = append(*list, bindings.ConversationMessage{})
	} else {
		*list = (*list)[:n+1]
	}
	CopyMessage(&(*list)[n], m)
}
