package turn

import (
	"context"
	"fmt"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
)

// turnReads holds what the drive's Open (or a Commit) read ahead, each
// for its one reader: the conversation for setup, the history before the
// user message for build-initial-messages, and the run's approvals for
// the approval steps.
type turnReads struct {
	conv    bindings.Conversation
	hasConv bool

	// history holds the newest messages before the user message: read by
	// Open with the conversation (before is then the seq the user message
	// gets when nothing is appended meanwhile: MessageCount+1), or by the
	// user message's Commit (before is the stored message's seq).
	history    []bindings.ConversationMessage
	hasHistory bool
	before     int64
	limit      int
	// count is the MessageCount Open read (hasCount): the condition on
	// which the deferred user message is stored (userDeferred).
	count        int
	hasCount     bool
	userDeferred bool

	// approvals are the run's approvals, read by Open (getApproval).
	approvals []bindings.Approval
}

// historyLimit is the number of earlier messages a turn of a reads
// (setupState.HistoryLimit).
func historyLimit(a agent.Agent) int {
	if cp := a.ConversationPolicy; cp != nil && cp.HistoryLimit != nil {
		return *cp.HistoryLimit
	}
	return DefaultHistoryLimit
}

// readsOf is what Open's read of the turn's conversation gives
// setup and build-initial-messages: the conversation and its message
// count, when there is one, and its history, when limit asked for one and
// the store read it consistently (a nil history: not read).
func readsOf(conv bindings.Conversation, hasConv bool, history []bindings.ConversationMessage, limit int) *turnReads {
	reads := &turnReads{}
	if hasConv {
		reads.conv, reads.hasConv = conv, true
		reads.count, reads.hasCount = conv.MessageCount, true
		if limit > 0 && history != nil {
			reads.history, reads.hasHistory = history, true
			reads.before, reads.limit = int64(conv.MessageCount)+1, limit
		}
	}
	return reads
}

// conversation is the turn's conversation for setup: the one Open read
// (once), or GetConversation's.
func (r *run) conversation(ctx context.Context) (bindings.Conversation, error) {
	if rd := r.reads; rd != nil && rd.hasConv {
		c := rd.conv
		rd.conv, rd.hasConv = bindings.Conversation{}, false
		if c.TenantID == r.tenantID && c.ID == r.in.ConversationID {
			return c, nil
		}
	}
	c, err := r.b.Conversations.GetConversation(ctx, r.tenantID, r.in.ConversationID)
	if err != nil {
		return c, coded(err, "get conversation")
	}
	return c, nil
}

// deferUserMessage reports whether the user message may wait for the
// drive's next write like the other messages (deferMessage), and marks it
// so: only with the history Open read for this turn's limit and the
// conversation's message count to store it on (Message.CheckCount). build-initial-messages then takes that
// history; the next write stores the message only if no message was
// appended meanwhile — so the message gets the seq right after the ones
// read, and the history read is exactly the messages before it — and
// otherwise appends it as it would have been (writeUserMessageAgain).
func (r *run) deferUserMessage() bool {
	rd := r.reads
	if rd == nil {
		return false
	}
	ok := rd.hasCount && rd.hasHistory && rd.before == int64(rd.count)+1 && rd.limit == r.s.HistoryLimit &&
		r.s.HistoryLimit > 0
	if ok && len(rd.history) > 0 && rd.history[len(rd.history)-1].ID == r.messageID(NodePersistUserMessage) {
		// An earlier drive stored this turn's user message and failed
		// before its step: the history read ahead holds it. Append it now
		// (the store returns the stored one) and read the history before
		// it, as without a read ahead.
		ok, rd.hasHistory, rd.history = false, false, nil
	}
	rd.userDeferred = ok
	return ok
}

// keepHistory keeps the history a Commit of the user message read (the
// messages before seq, the stored message's) for build-initial-messages.
func (r *run) keepHistory(history []bindings.ConversationMessage, seq int64) {
	if r.reads == nil {
		r.reads = &turnReads{}
	}
	r.reads.history, r.reads.hasHistory = history, true
	r.reads.before, r.reads.limit = seq, r.s.HistoryLimit
}

// history is the history before the user message for
// build-initial-messages: the messages read ahead (once), when read with
// this bound and limit — the bound is the user message's seq, or, while
// the message is deferred, the one it will be stored with — or
// ReadMessages'.
func (r *run) history(ctx context.Context) ([]bindings.ConversationMessage, error) {
	if rd := r.reads; rd != nil && rd.hasHistory {
		h, before, limit := rd.history, rd.before, rd.limit
		rd.history, rd.hasHistory = nil, false
		seq := r.userMsg.Seq
		if seq == 0 && rd.userDeferred && r.deferred.set && r.deferred.key == NodePersistUserMessage {
			seq = int64(rd.count) + 1 // what AppendUserMessageStep stores it with, or stores nothing
		}
		if before == seq && limit == r.s.HistoryLimit {
			return h, nil
		}
	}
	hist, err := r.b.Conversations.ReadMessages(ctx, bindings.ReadMessagesInput{
		TenantID: r.tenantID, ConversationID: r.in.ConversationID,
		Limit: r.s.HistoryLimit, BeforeSeq: r.userMsg.Seq,
	})
	if err != nil {
		return nil, coded(err, "read messages")
	}
	return hist, nil
}

// writeUserMessageAgain is writeDeferred of the deferred user message
// when its count-checked Commit stored nothing because the conversation
// changed since Open read it: the write is made as it would have been
// without the read ahead. The entries before the message and the message
// go in one Commit, which reads the history before it; the
// message step's entry gets the stored message; build-initial-messages,
// when buffered, is decided again from that history (the model has not
// been called: the write carries its started entry); then the rest is
// written as writeEntries (or end, with finish) writes it. The
// journal is then what it would have been had the user message been
// appended at once.
func (r *run) writeUserMessageAgain(ctx context.Context, entries []bindings.JournalEntry, at int, finish bindings.RunStatus) ([]bindings.JournalEntry, []bool, error) {
	d := r.deferred
	msg, ok := r.message(&d)
	if !ok {
		r.dropBuffer()
		return nil, nil, &agents.PersistenceError{Op: "append user message", Err: fmt.Errorf("the message of step %s is not held", d.key)}
	}
	r.reads.userDeferred = false
	n := len(r.buf)
	rest := append([]bindings.JournalEntry(nil), entries[at:]...) // the step's entry and those after it
	head := entries[:at:at]
	res, err := r.commit(ctx, journal.CommitInput{Entries: head, Message: &journal.Message{Index: at, Message: msg, HistoryLimit: r.s.HistoryLimit}})
	if err != nil {
		if res.Entries == nil {
			// Nothing stored: the deferred message stays for a retry.
			return nil, nil, coded(err, "append message")
		}
		return nil, nil, r.refusedDeferred(ctx, at, res.Entries, res.Appended, err)
	}
	r.keepHistory(res.History, res.Message.Seq)
	if len(res.Entries) != at || len(res.Appended) != at {
		return nil, nil, &agents.PersistenceError{Op: "append message", Err: fmt.Errorf("%d entries written, %d returned", at, len(res.Entries))}
	}
	for i := range res.Entries {
		if !res.Appended[i] {
			return nil, nil, &agents.RunBusyError{RunID: r.id}
		}
		if st := r.entries.get(res.Entries[i].Key); st != nil && st.result != 0 && r.at(st.result) != &res.Entries[i] {
			*r.at(st.result) = res.Entries[i]
		}
	}
	m := res.Message
	r.deferred.set = false
	if d.appended < len(r.appended) && r.appended[d.appended].ID == m.ID {
		r.appended[d.appended] = m
	}
	r.userMsg = m // the history's bound
	if d.after != nil {
		d.after(ctx, m)
	}
	out, err := encodeStep(r, &m)
	if err != nil {
		return nil, nil, &agents.PersistenceError{Op: "encode step " + d.key, Err: err, Permanent: true}
	}
	rest[0].Output = out
	if st := r.entries.get(d.key); st != nil && st.result != 0 {
		r.at(st.result).Output = out
	}
	for i := range rest {
		if rest[i].Key != NodeBuildInitialMessages || rest[i].Status != bindings.StepCompleted {
			continue
		}
		hist, err := r.history(ctx)
		if err != nil {
			return nil, nil, err
		}
		msgs := r.initialMessages(hist)
		raw, err := encodeStep(r, &msgs)
		if err != nil {
			return nil, nil, &agents.PersistenceError{Op: "encode step " + NodeBuildInitialMessages, Err: err, Permanent: true}
		}
		rest[i].Output = raw
		if st := r.entries.get(NodeBuildInitialMessages); st != nil && st.result != 0 {
			r.at(st.result).Output = raw
		}
		r.messages = msgs
	}
	// A buffer of its own: the entry slab's slots from the buffer's start
	// on hold the entries just stored, which the index points to.
	r.buf = append(r.buf[:0:0], rest[:n-at]...)
	var stored []bindings.JournalEntry
	var appended []bool
	if finish != "" {
		if stored, appended, err = r.commitEntries(ctx, rest, finish); err != nil {
			return nil, nil, err
		}
		err = r.stored(stored[:len(r.buf)], appended)
	} else {
		stored, appended, err = r.writeEntries(ctx, rest)
	}
	if err != nil {
		return nil, nil, err
	}
	return append(res.Entries, stored...), append(res.Appended, appended...), nil
}
