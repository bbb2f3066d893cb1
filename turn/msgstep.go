package turn

import (
	"context"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// A message step's append may wait for the drive's next write
// (drive.Journal.DeferMessage); what follows is the turn's side of it:
// the messages the journal asks for and tells about (drive.Flow).

// deferMessage defers the append of in, the message of step key, to the
// next write of the drive (drive.Journal.DeferMessage): it reports whether
// it did. The message is r.appended's next, where persist puts it before
// any write can happen. The user message waits only with the history Open
// read ahead (drive.Journal.DeferUserMessage).
func (r *run) deferMessage(ctx context.Context, key, node string, after func(context.Context, bindings.ConversationMessage)) (bool, error) {
	user := key == NodePersistUserMessage
	if user && !r.DeferUserMessage(r.messageID(NodePersistUserMessage), r.s.HistoryLimit) {
		return false, nil
	}
	if err := r.DeferMessage(ctx, key, node, user, len(r.appended), after); err != nil {
		return false, err
	}
	return true, nil
}

// appendMessage stores a message of the run after the buffered results,
// in one Commit (drive.Journal.AppendMessage); the user message's append
// also reads the history before it (wantHistory).
func (r *run) appendMessage(ctx context.Context, in bindings.AppendMessageInput) (bindings.ConversationMessage, error) {
	limit := 0
	if r.wantHistory {
		limit = r.s.HistoryLimit
	}
	return r.AppendMessage(ctx, in, limit)
}

// Appended returns r.appended[i], the message a deferred message step
// appended (drive.Flow), or nil.
func (r *run) Appended(i int) *bindings.ConversationMessage {
	if i >= len(r.appended) {
		return nil
	}
	return &r.appended[i]
}

// UserMessage returns the turn's user message (drive.Flow).
func (r *run) UserMessage() *bindings.ConversationMessage { return &r.userMsg }

// MessageRefused forgets the deferred message r.appended[i], never stored.
func (r *run) MessageRefused(i int) {
	if i < len(r.appended) {
		r.appended = r.appended[:i]
	}
}

// DecideAgain decides build-initial-messages again, when entries hold its
// buffered result, from the history the user message's Commit read (see
// drive.Journal's writeUserMessageAgain).
func (r *run) DecideAgain(ctx context.Context, entries []bindings.JournalEntry) error {
	for i := range entries {
		if entries[i].Key != NodeBuildInitialMessages || entries[i].Status != bindings.StepCompleted {
			continue
		}
		hist, err := r.history(ctx)
		if err != nil {
			return err
		}
		msgs := r.initialMessages(hist)
		raw, err := encodeStep(r, &msgs)
		if err != nil {
			return &agents.PersistenceError{Op: "encode step " + NodeBuildInitialMessages, Err: err, Permanent: true}
		}
		entries[i].Output = raw
		if e := r.Result(NodeBuildInitialMessages); e != nil {
			e.Output = raw
		}
		r.messages = msgs
	}
	return nil
}
