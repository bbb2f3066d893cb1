package turn

import (
	"context"

	"github.com/kindgi/agents/bindings"
)

// turnReads holds what a bindings.TurnOpener read ahead for a drive, each
// for its one reader: the conversation for setup (read with OpenTurn) and
// the history before the user message for build-initial-messages (read
// with AppendUserMessage).
type turnReads struct {
	conv    bindings.Conversation
	hasConv bool

	wantHistory bool // the user message is being appended
	history     []bindings.ConversationMessage
	hasHistory  bool
	before      int64 // the bound and limit history was read with
	limit       int
}

// turnOpener returns b's bindings.TurnOpener when its store offers one
// and is bound, as itself, as the turn's Runs, Snapshots and
// Conversations (so that no wrapper's own methods are bypassed); nil
// otherwise.
func turnOpener(b *Bindings) bindings.TurnOpener {
	to, ok := b.Runs.(bindings.TurnOpener)
	if !ok || !sameBinding(to.TurnOpenerStore(), b.Runs) || !sameBinding(b.Runs, b.Snapshots) || !sameBinding(b.Runs, b.Conversations) {
		return nil
	}
	return to
}

// openTurn is openRun for Invoke: with a bindings.TurnOpener it also reads
// the turn's conversation in the same call (conv, hasConv), which setup
// then takes instead of calling GetConversation.
func openTurn(ctx context.Context, b *Bindings, in bindings.OpenRunInput) (run bindings.Run, entries []bindings.JournalEntry, snap bindings.RunSnapshotRecord, hasSnap bool, reads turnReads, err error) {
	to := turnOpener(b)
	if to == nil {
		run, entries, snap, hasSnap, err = openRun(ctx, b, in)
		return run, entries, snap, hasSnap, reads, err
	}
	res, err := to.OpenTurn(ctx, in)
	if err != nil {
		return bindings.Run{}, nil, snap, false, reads, coded(err, "open run")
	}
	reads.conv, reads.hasConv = res.Conversation, res.HasConversation
	return res.Run, res.Journal, res.Snapshot, true, reads, nil
}

// conversation is the turn's conversation for setup: the one OpenTurn
// read (once), or GetConversation's.
func (r *run) conversation(ctx context.Context) (bindings.Conversation, error) {
	if rd := &r.reads; rd.hasConv {
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

// appendStepsAndMessage is the combiner's AppendStepsAndMessage; for the
// user message, with a bindings.TurnOpener, it is AppendUserMessage,
// which also reads the history build-initial-messages needs (the messages
// before the stored user message) in the same call.
func (r *run) appendStepsAndMessage(ctx context.Context, steps bindings.AppendStepsInput, in bindings.AppendMessageInput) ([]bindings.JournalEntry, []bool, bindings.ConversationMessage, error) {
	if !r.reads.wantHistory || r.s.HistoryLimit < 1 {
		return r.combiner.AppendStepsAndMessage(ctx, steps, in)
	}
	to := turnOpener(r.b)
	if to == nil {
		return r.combiner.AppendStepsAndMessage(ctx, steps, in)
	}
	res, err := to.AppendUserMessage(ctx, bindings.UserMessageInput{Steps: steps, Message: in, HistoryLimit: r.s.HistoryLimit})
	if err == nil {
		r.reads.history, r.reads.hasHistory = res.History, true
		r.reads.before, r.reads.limit = res.Message.Seq, r.s.HistoryLimit
	}
	return res.Entries, res.Appended, res.Message, err
}

// history is the history before the user message for
// build-initial-messages: the messages AppendUserMessage read (once),
// when read with this bound and limit, or ReadMessages'.
func (r *run) history(ctx context.Context) ([]bindings.ConversationMessage, error) {
	if rd := &r.reads; rd.hasHistory {
		h, before, limit := rd.history, rd.before, rd.limit
		rd.history, rd.hasHistory = nil, false
		if before == r.userMsg.Seq && limit == r.s.HistoryLimit {
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
