package drive

import (
	"context"
	"fmt"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
)

// Reads holds what the drive's Open (or a Commit) read ahead, each for
// its one reader: the conversation for setup, the history before the user
// message for build-initial-messages, and the run's approvals for the
// approval steps. Each is handed out once (the Take methods of Journal).
type Reads struct {
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

	// approvals are the run's approvals, read by Open (TakeApproval).
	approvals []bindings.Approval
}

// ReadsOf is what Open's read of the turn's conversation gives setup and
// build-initial-messages: the conversation and its message count, when
// there is one, and its history, when limit asked for one and the store
// read it consistently (a nil history: not read).
func ReadsOf(conv bindings.Conversation, hasConv bool, history []bindings.ConversationMessage, limit int) *Reads {
	reads := &Reads{}
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

// ReadsOfApprovals is what Open's read of a run's approvals gives the
// approval steps.
func ReadsOfApprovals(approvals []bindings.Approval) *Reads {
	return &Reads{approvals: approvals}
}

// TakeConversation returns the conversation convID of the drive's tenant
// as Open read it (once); ok is false when it was not read.
func (j *Journal) TakeConversation(convID string) (c bindings.Conversation, ok bool) {
	if rd := j.Reads; rd != nil && rd.hasConv {
		c := rd.conv
		rd.conv, rd.hasConv = bindings.Conversation{}, false
		if c.TenantID == j.tenantID && c.ID == convID {
			return c, true
		}
	}
	return bindings.Conversation{}, false
}

// TakeApproval returns the parked approval id as Open read it (once); ok
// is false when it was not read.
func (j *Journal) TakeApproval(id string) (a bindings.Approval, ok bool) {
	if rd := j.Reads; rd != nil {
		for i := range rd.approvals {
			if a := rd.approvals[i]; a.Request.ID == id && a.Request.TenantID == j.tenantID {
				rd.approvals = append(rd.approvals[:i:i], rd.approvals[i+1:]...)
				return a, true
			}
		}
	}
	return bindings.Approval{}, false
}

// DeferUserMessage reports whether the user message, of id msgID, may wait
// for the drive's next write like the other messages (DeferMessage), and
// marks it so: only with the history Open read for this turn's limit and
// the conversation's message count to store it on (Message.CheckCount).
// build-initial-messages then takes that history; the next write stores
// the message only if no message was appended meanwhile — so the message
// gets the seq right after the ones read, and the history read is exactly
// the messages before it — and otherwise appends it as it would have been
// (writeUserMessageAgain).
func (j *Journal) DeferUserMessage(msgID string, limit int) bool {
	rd := j.Reads
	if rd == nil {
		return false
	}
	ok := rd.hasCount && rd.hasHistory && rd.before == int64(rd.count)+1 && rd.limit == limit && limit > 0
	if ok && len(rd.history) > 0 && rd.history[len(rd.history)-1].ID == msgID {
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
// limit messages before seq, the stored message's) for
// build-initial-messages.
func (j *Journal) keepHistory(history []bindings.ConversationMessage, seq int64, limit int) {
	if j.Reads == nil {
		j.Reads = &Reads{}
	}
	j.Reads.history, j.Reads.hasHistory = history, true
	j.Reads.before, j.Reads.limit = seq, limit
}

// TakeHistory returns the history before the user message read ahead
// (once), when read with this bound and limit — the bound is the user
// message's seq (userSeq), or, while the message is deferred, the one it
// will be stored with; ok is false otherwise.
func (j *Journal) TakeHistory(userSeq int64, limit int) (h []bindings.ConversationMessage, ok bool) {
	if rd := j.Reads; rd != nil && rd.hasHistory {
		h, before, hlimit := rd.history, rd.before, rd.limit
		rd.history, rd.hasHistory = nil, false
		seq := userSeq
		if seq == 0 && rd.userDeferred && j.deferred.set && j.deferred.user {
			seq = int64(rd.count) + 1 // what AppendUserMessageStep stores it with, or stores nothing
		}
		if before == seq && hlimit == limit {
			return h, true
		}
	}
	return nil, false
}

// writeUserMessageAgain is writeDeferred of the deferred user message
// when its count-checked Commit stored nothing because the conversation
// changed since Open read it: the write is made as it would have been
// without the read ahead. The entries before the message and the message
// go in one Commit, which reads the history before it; the
// message step's entry gets the stored message; the turn decides again
// what it decided from the history read ahead (Flow.DecideAgain: the
// model has not been called, the write carries its started entry); then
// the rest is written as writeEntries (or End, with finish) writes it. The
// journal is then what it would have been had the user message been
// appended at once.
func (j *Journal) writeUserMessageAgain(ctx context.Context, entries []bindings.JournalEntry, at int, finish bindings.RunStatus) ([]bindings.JournalEntry, []bool, error) {
	d := j.deferred
	msg, ok := j.message(&d)
	if !ok {
		j.DropBuffer()
		return nil, nil, &agents.PersistenceError{Op: "append user message", Err: fmt.Errorf("the message of step %s is not held", d.key)}
	}
	j.Reads.userDeferred = false
	limit := j.Reads.limit // the turn's history limit: DeferUserMessage checked it
	n := len(j.buf)
	rest := append([]bindings.JournalEntry(nil), entries[at:]...) // the step's entry and those after it
	head := entries[:at:at]
	res, err := j.commit(ctx, journal.CommitInput{Entries: head, Message: &journal.Message{Index: at, Message: msg, HistoryLimit: limit}})
	if err != nil {
		if res.Entries == nil {
			// Nothing stored: the deferred message stays for a retry.
			return nil, nil, Coded(err, "append message")
		}
		return nil, nil, j.refusedDeferred(ctx, at, res.Entries, res.Appended, err)
	}
	j.keepHistory(res.History, res.Message.Seq, limit)
	if len(res.Entries) != at || len(res.Appended) != at {
		return nil, nil, &agents.PersistenceError{Op: "append message", Err: fmt.Errorf("%d entries written, %d returned", at, len(res.Entries))}
	}
	for i := range res.Entries {
		if !res.Appended[i] {
			return nil, nil, &agents.RunBusyError{RunID: j.runID}
		}
		if st := j.entries.get(res.Entries[i].Key); st != nil && st.Result != 0 && j.At(st.Result) != &res.Entries[i] {
			*j.At(st.Result) = res.Entries[i]
		}
	}
	m := res.Message
	j.deferred.set = false
	j.messageStored(&d, &m) // the history's bound (d.user)
	if d.after != nil {
		d.after(ctx, m)
	}
	out, err := EncodeStep(j, &m, nil)
	if err != nil {
		return nil, nil, &agents.PersistenceError{Op: "encode step " + d.key, Err: err, Permanent: true}
	}
	rest[0].Output = out
	if e := j.Result(d.key); e != nil {
		e.Output = out
	}
	if err := j.flow.DecideAgain(ctx, rest); err != nil {
		return nil, nil, err
	}
	// A buffer of its own: the entry slab's slots from the buffer's start
	// on hold the entries just stored, which the index points to.
	j.buf = append(j.buf[:0:0], rest[:n-at]...)
	var stored []bindings.JournalEntry
	var appended []bool
	if finish != "" {
		if stored, appended, err = j.commitEntries(ctx, rest, finish); err != nil {
			return nil, nil, err
		}
		err = j.stored(stored[:len(j.buf)], appended)
	} else {
		stored, appended, err = j.writeEntries(ctx, rest)
	}
	if err != nil {
		return nil, nil, err
	}
	return append(res.Entries, stored...), append(res.Appended, appended...), nil
}

// Conversation is the drive's conversation convID for setup: the one Open
// read (once: TakeConversation), or cb's GetConversation.
func (j *Journal) Conversation(ctx context.Context, cb bindings.ConversationBinding, convID string) (bindings.Conversation, error) {
	if c, ok := j.TakeConversation(convID); ok {
		return c, nil
	}
	c, err := cb.GetConversation(ctx, j.tenantID, convID)
	if err != nil {
		return c, Coded(err, "get conversation")
	}
	return c, nil
}

// History is the history before the user message (of seq userSeq) of
// conversation convID, at most limit messages: the messages read ahead
// (once: TakeHistory), when read with this bound and limit, or cb's
// ReadMessages.
func (j *Journal) History(ctx context.Context, cb bindings.ConversationBinding, convID string, userSeq int64, limit int) ([]bindings.ConversationMessage, error) {
	if h, ok := j.TakeHistory(userSeq, limit); ok {
		return h, nil
	}
	hist, err := cb.ReadMessages(ctx, bindings.ReadMessagesInput{
		TenantID: j.tenantID, ConversationID: convID, Limit: limit, BeforeSeq: userSeq,
	})
	if err != nil {
		return nil, Coded(err, "read messages")
	}
	return hist, nil
}

// Approval is h's GetApproval of the parked approval id: the one Open read
// at the start of the drive (once: TakeApproval), or the binding's.
func (j *Journal) Approval(ctx context.Context, h bindings.HitlBinding, id string) (bindings.Approval, error) {
	if a, ok := j.TakeApproval(id); ok {
		return a, nil
	}
	return h.GetApproval(ctx, j.tenantID, id)
}
