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

// DeferredMessage returns the append of the deferred message r.appended[i],
// as persist was given it: the message persist returned for it has its
// fields, but for the Seq and CreatedAt the store gives it. ok is false
// when r.appended does not hold it (its step failed before persist
// appended it; then its entry is not buffered either).
func (r *run) DeferredMessage(i int) (in bindings.AppendMessageInput, ok bool) {
	if i >= len(r.appended) {
		return in, false
	}
	m := &r.appended[i]
	return bindings.AppendMessageInput{
		TenantID: m.TenantID, ConversationID: m.ConversationID, ID: m.ID, Role: m.Role, Content: m.Content,
		ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, TurnNumber: m.TurnNumber, RunID: m.RunID,
		ParticipantID: m.ParticipantID, Metadata: m.Metadata,
	}, true
}

// MessageStored takes the stored form of the deferred message r.appended[i]
// (with its Seq and CreatedAt), and for the user message (user) the bound
// of the history reads after it.
func (r *run) MessageStored(i int, user bool, m *bindings.ConversationMessage) {
	if i < len(r.appended) && r.appended[i].ID == m.ID {
		copyMessage(&r.appended[i], m)
	}
	if user {
		copyMessage(&r.userMsg, m)
	}
}

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
