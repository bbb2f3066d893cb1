package sweep

import (
	"context"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/agenttool"
	"github.com/kindgi/agents/turn/internal/codes"
)

// Close is turn.CloseInactive once its bindings are checked: at now it
// closes, with lister.CloseIfInactive, every conversation lister lists
// that has been idle longer than its agent's
// autoCloseAfterInactiveSeconds, finding each agent once with lookup. A
// conversation whose agent cannot be found is given to fail, and the
// sweep goes on; the returned error stops the sweep (a failed listing or
// close, ctx done).
func Close(ctx context.Context, lister bindings.InactiveConversationLister, lookup Lookup, now time.Time,
	fail func(bindings.InactiveConversationRef, error)) (Counts, error) {
	var st Counts
	type agentRef struct{ tenant, id, version string }
	type found struct {
		a   agent.Agent
		err error
	}
	agentsSeen := map[agentRef]found{}
	// autoCloseAfterInactiveSeconds is at least 1: nothing idle for a
	// second or less is due.
	idleBefore := bindings.IdleBefore(now, 1)
	list := func(ctx context.Context, after bindings.InactiveConversationRef, limit int) ([]bindings.InactiveConversationRef, error) {
		return lister.ListInactiveConversations(ctx, bindings.InactiveConversationsInput{IdleBefore: idleBefore, After: after, Limit: limit})
	}
	err := eachPage(ctx, "list inactive conversations", list, func(ref bindings.InactiveConversationRef) error {
		st.Listed++
		k := agentRef{ref.TenantID, ref.AgentID, ref.AgentVersion}
		f, seen := agentsSeen[k]
		if !seen {
			f.a, f.err = agenttool.Lookup(ctx, lookup, ref.TenantID, ref.AgentID, ref.AgentVersion)
			agentsSeen[k] = f
		}
		if f.err != nil {
			if err := codes.Aborted(ctx); err != nil {
				return err
			}
			st.Failed++
			fail(ref, f.err)
			return nil
		}
		cutoff, due := CloseCutoff(f.a, now)
		if !due || !ref.LastActivityAt.Before(cutoff) {
			st.Skipped++
			return nil
		}
		closed, err := lister.CloseIfInactive(ctx, ref.TenantID, ref.ConversationID, cutoff)
		switch {
		case agents.CodeOf(err) == agents.CodeConversationNotFound:
			st.Skipped++ // deleted since it was listed
		case err != nil:
			return codes.Coded(err, "close inactive conversation")
		case closed:
			st.Done++
		default:
			st.Skipped++
		}
		return nil
	})
	return st, err
}

// CloseCutoff returns the LastActivityAt before which a conversation of a
// is due to close at now; due is false when a sets no
// autoCloseAfterInactiveSeconds.
func CloseCutoff(a agent.Agent, now time.Time) (cutoff time.Time, due bool) {
	p := a.ConversationPolicy
	if p == nil || p.AutoCloseAfterInactiveSeconds == nil || *p.AutoCloseAfterInactiveSeconds <= 0 {
		return time.Time{}, false
	}
	return bindings.IdleBefore(now, *p.AutoCloseAfterInactiveSeconds), true
}
