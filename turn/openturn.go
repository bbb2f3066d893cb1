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

// conversation is the turn's conversation for setup: the one Open read
// (once), or GetConversation's.
func (r *run) conversation(ctx context.Context) (bindings.Conversation, error) {
	if c, ok := r.TakeConversation(r.in.ConversationID); ok {
		return c, nil
	}
	c, err := r.b.Conversations.GetConversation(ctx, r.tenantID, r.in.ConversationID)
	if err != nil {
		return c, coded(err, "get conversation")
	}
	return c, nil
}

// history is the history before the user message for
// build-initial-messages: the messages read ahead (once), when read with
// this bound and limit (drive.Journal.TakeHistory), or ReadMessages'.
func (r *run) history(ctx context.Context) ([]bindings.ConversationMessage, error) {
	if h, ok := r.TakeHistory(r.userMsg.Seq, r.s.HistoryLimit); ok {
		return h, nil
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

// getApproval is the HITL binding's GetApproval of a parked approval: the
// one Open read at the start of the drive (once), or the binding's.
func (r *run) getApproval(ctx context.Context, id string) (bindings.Approval, error) {
	if a, ok := r.TakeApproval(id); ok {
		return a, nil
	}
	return r.b.Hitl.GetApproval(ctx, r.tenantID, id)
}

// coded returns err when it carries a code, and a *agents.PersistenceError
// naming op otherwise (drive.Coded).
func coded(err error, op string) error { return drive.Coded(err, op) }
