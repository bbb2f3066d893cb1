package turn

import (
	"context"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
)

// closePage is how many idle conversations CloseInactive asks the store
// for at a time.
const closePage = 100

// CloseStats counts what one CloseInactive sweep did, per listed
// conversation.
type CloseStats struct {
	// Listed is how many open, idle conversations the store listed.
	Listed int `json:"listed"`
	// Closed is how many this sweep closed.
	Closed int `json:"closed"`
	// Skipped conversations needed nothing: their agent sets no
	// autoCloseAfterInactiveSeconds or they are not idle long enough for
	// it, or another sweep or a turn closed them first, or a message made
	// them active again.
	Skipped int `json:"skipped"`
	// Failed conversations could not be handled (see Failures); a later
	// sweep tries again.
	Failed   int            `json:"failed"`
	Failures []CloseFailure `json:"-"`
}

// CloseFailure is one conversation a sweep could not handle, with the
// coded error that stopped it.
type CloseFailure struct {
	TenantID       string
	ConversationID string
	Err            error
}

// CloseInactive is the auto-close sweep of conversationPolicy
// autoCloseAfterInactiveSeconds: at now it closes every open conversation
// that has been idle longer than its agent's setting. A conversation is
// idle since the time of its last message (bindings.InactiveConversationLister
// documents it): with the setting at N seconds it is closed once
// now - LastActivityAt > N s. A turn on such a conversation closes it
// itself (and fails with conversation-closed); the sweep closes the ones
// nobody writes to.
//
// b.Conversations must implement bindings.InactiveConversationLister
// (memstore and pgstore do), else the sweep is invalid-bindings, as it is
// without lookup. The sweep lists open conversations idle for more than a
// second, oldest activity first, page by page; finds each one's agent with
// lookup (once per tenant and id@version); and closes the due ones with
// CloseIfInactive, which closes only a conversation still open and still
// idle since before the cutoff, atomically with appends. So any number of
// workers may sweep at once: each conversation is closed once, and never
// one that a message made active after it was listed.
//
// A conversation whose agent cannot be found is counted in Failed with its
// error in Failures, and the sweep goes on. The returned error is for the
// sweep itself: bindings, a failed listing or close, or ctx cancelled
// (turn-aborted), with the stats of what was done until then.
func CloseInactive(ctx context.Context, b Bindings, lookup AgentLookup, now time.Time) (CloseStats, error) {
	var st CloseStats
	if b.Conversations == nil {
		return st, &agents.InvalidBindingsError{Reason: "CloseInactive needs Bindings.Conversations"}
	}
	lister, ok := b.Conversations.(bindings.InactiveConversationLister)
	if !ok {
		return st, &agents.InvalidBindingsError{Reason: "CloseInactive needs a conversation binding that implements bindings.InactiveConversationLister"}
	}
	if lookup == nil {
		return st, &agents.InvalidBindingsError{Reason: "CloseInactive needs an agent lookup"}
	}
	type agentRef struct{ tenant, id, version string }
	type found struct {
		a   agent.Agent
		err error
	}
	agentsSeen := map[agentRef]found{}
	// autoCloseAfterInactiveSeconds is at least 1: nothing idle for a
	// second or less is due.
	in := bindings.InactiveConversationsInput{IdleBefore: bindings.IdleBefore(now, 1), Limit: closePage}
	for {
		if err := ctx.Err(); err != nil {
			return st, &agents.TurnAbortedError{Reason: agents.AbortExternal, Err: err}
		}
		page, err := lister.ListInactiveConversations(ctx, in)
		if err != nil {
			return st, coded(err, "list inactive conversations")
		}
		for _, ref := range page {
			st.Listed++
			k := agentRef{ref.TenantID, ref.AgentID, ref.AgentVersion}
			f, seen := agentsSeen[k]
			if !seen {
				f.a, f.err = lookup(ctx, ref.TenantID, ref.AgentID, ref.AgentVersion)
				if f.err != nil && agents.CodeOf(f.err) == "" {
					f.err = &agents.AgentNotFoundError{ID: ref.AgentID, Version: ref.AgentVersion}
				}
				agentsSeen[k] = f
			}
			if f.err != nil {
				if ctx.Err() != nil {
					return st, &agents.TurnAbortedError{Reason: agents.AbortExternal, Err: ctx.Err()}
				}
				st.Failed++
				st.Failures = append(st.Failures, CloseFailure{TenantID: ref.TenantID, ConversationID: ref.ConversationID, Err: f.err})
				continue
			}
			cutoff, due := closeCutoff(f.a, now)
			if !due || !ref.LastActivityAt.Before(cutoff) {
				st.Skipped++
				continue
			}
			closed, err := lister.CloseIfInactive(ctx, ref.TenantID, ref.ConversationID, cutoff)
			switch {
			case agents.CodeOf(err) == agents.CodeConversationNotFound:
				st.Skipped++ // deleted since it was listed
			case err != nil:
				return st, coded(err, "close inactive conversation")
			case closed:
				st.Closed++
			default:
				st.Skipped++
			}
		}
		if len(page) < in.Limit {
			return st, nil
		}
		in.After = page[len(page)-1]
	}
}

// closeCutoff returns the LastActivityAt before which a conversation of a
// is due to close at now; due is false when a sets no
// autoCloseAfterInactiveSeconds.
func closeCutoff(a agent.Agent, now time.Time) (cutoff time.Time, due bool) {
	p := a.ConversationPolicy
	if p == nil || p.AutoCloseAfterInactiveSeconds == nil || *p.AutoCloseAfterInactiveSeconds <= 0 {
		return time.Time{}, false
	}
	return bindings.IdleBefore(now, *p.AutoCloseAfterInactiveSeconds), true
}
