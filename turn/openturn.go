package turn

import (
	"context"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/turn/internal/drive"
)

// A drive opens its run with the driver's Open (Invoke, Resume), which
// reads ahead what the turn reads first: the conversation, the history
// before the user message, the run's approvals (drive.Reads). Each reader
// below takes its read once, or asks the binding.

// driverOf is the drive's journal: Bindings.Journal, the store's own
// Driver (native), or journal.Adapt of exactly the basic bindings bound,
// so that a wrapper's methods are never bypassed.
func driverOf(b *Bindings) (d journal.Driver, native bool) {
	if b.Journal != nil {
		return b.Journal, true
	}
	return journal.Adapt(journal.Bindings{Snapshots: b.Snapshots, Runs: b.Runs, Conversations: b.Conversations, Hitl: b.Hitl}), false
}

// historyLimit is the number of earlier messages a turn of a reads
// (setupState.HistoryLimit).
func historyLimit(a agent.Agent) int {
	if cp := a.ConversationPolicy; cp != nil && cp.HistoryLimit != nil {
		return *cp.HistoryLimit
	}
	return DefaultHistoryLimit
}

// conversation is the turn's conversation for setup (drive.Journal.Conversation).
func (r *run) conversation(ctx context.Context) (bindings.Conversation, error) {
	return r.Conversation(ctx, r.b.Conversations, r.in.ConversationID)
}

// history is the history before the user message for
// build-initial-messages (drive.Journal.History).
func (r *run) history(ctx context.Context) ([]bindings.ConversationMessage, error) {
	return r.History(ctx, r.b.Conversations, r.in.ConversationID, r.userMsg.Seq, r.s.HistoryLimit)
}

// getApproval is the HITL binding's GetApproval of a parked approval
// (drive.Journal.Approval).
func (r *run) getApproval(ctx context.Context, id string) (bindings.Approval, error) {
	return r.Approval(ctx, r.b.Hitl, id)
}

// coded returns err when it carries a code, and a *agents.PersistenceError
// naming op otherwise (drive.Coded).
func coded(err error, op string) error { return drive.Coded(err, op) }
