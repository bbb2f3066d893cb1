package sweep

import (
	"context"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/codes"
)

// AutoClose is a turn's setup closing its own conversation conv when it
// has been idle longer than agent a's autoCloseAfterInactiveSeconds at
// now — idle since its last message's time (LastActivityAt) — and then
// returning *agents.ConversationClosedError: the turn stores nothing
// else. With the conversation binding's InactiveConversationLister the
// close is conditional (a message appended meanwhile keeps it open, and
// AutoClose returns nil); without it, CloseConversation closes it. A dry
// run closes nothing and fails alike. open is called before the close (a
// write: the turn opens its run, or takes its lease, first).
func AutoClose(ctx context.Context, convs bindings.ConversationBinding, a agent.Agent, tenantID string, conv bindings.Conversation,
	now time.Time, dryRun bool, open func(context.Context) error) error {
	cutoff, due := CloseCutoff(a, now)
	if !due || !conv.LastActivityAt.Before(cutoff) {
		return nil
	}
	closed := &agents.ConversationClosedError{ConversationID: conv.ID}
	if dryRun {
		return closed
	}
	if err := open(ctx); err != nil {
		return err
	}
	l, ok := convs.(bindings.InactiveConversationLister)
	if !ok {
		if err := convs.CloseConversation(ctx, tenantID, conv.ID); err != nil {
			return codes.Coded(err, "close inactive conversation")
		}
		return closed
	}
	ok, err := l.CloseIfInactive(ctx, tenantID, conv.ID, cutoff)
	if err != nil {
		return codes.Coded(err, "close inactive conversation")
	}
	if !ok {
		// Closed by a sweep meanwhile, or active again: read which.
		cur, err := convs.GetConversation(ctx, tenantID, conv.ID)
		if err != nil {
			return codes.Coded(err, "get conversation")
		}
		if cur.Status == bindings.ConversationOpen {
			return nil
		}
	}
	return closed
}
