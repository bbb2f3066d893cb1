package turn

import (
	"context"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/sweep"
)

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
	lister, err := sweep.CloseLister(b.Conversations, sweep.Lookup(lookup))
	if err != nil {
		return st, err
	}
	n, err := sweep.Close(ctx, lister, sweep.Lookup(lookup), now, func(ref bindings.InactiveConversationRef, err error) {
		st.Failures = append(st.Failures, CloseFailure{TenantID: ref.TenantID, ConversationID: ref.ConversationID, Err: err})
	})
	st.Listed, st.Closed, st.Skipped, st.Failed = n.Listed, n.Done, n.Skipped, n.Failed
	return st, err
}
