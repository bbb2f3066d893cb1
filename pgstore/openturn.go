package pgstore

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/kindgi/agents/bindings"
)

// batchExtra is statements a write call sends after its own, in its round
// trip and transaction: queue queues them, read reads their results. The
// tenant is set by the functions before them (set_config(…, true) lasts
// for the transaction). A nil batchExtra queues and reads nothing.
type batchExtra struct {
	queueFn func(b *pgx.Batch)
	readFn  func(br pgx.BatchResults) error
}

func (e *batchExtra) queue(b *pgx.Batch) {
	if e != nil {
		e.queueFn(b)
	}
}

func (e *batchExtra) read(br pgx.BatchResults) error {
	if e == nil {
		return nil
	}
	return e.readFn(br)
}

// sqlHistoryBefore reads the newest $4 messages before the message $3 of
// the conversation (none when there is no such message): ReadMessages'
// backward walk of agent_conversation_messages_seq_idx, bounded by that
// message's seq, which the same transaction just assigned or found.
const sqlHistoryBefore = `SELECT ` + messageCols + ` FROM agent_conversation_messages
	WHERE tenant_id = $1 AND conversation_id = $2
	  AND seq < (SELECT m.seq FROM agent_conversation_messages m WHERE m.tenant_id = $1 AND m.conversation_id = $2 AND m.id = $3)
	ORDER BY seq DESC
	LIMIT $4`

var _ bindings.TurnOpener = (*Store)(nil)

// TurnOpenerStore implements bindings.TurnOpener: the store itself.
func (s *Store) TurnOpenerStore() bindings.RunBinding { return s }

// OpenTurn implements bindings.TurnOpener: OpenRun and GetConversation of
// the snapshot's conversation in one round trip (one more statement in
// OpenRun's batch, read under OpenRun's transaction).
func (s *Store) OpenTurn(ctx context.Context, in bindings.OpenRunInput) (bindings.OpenTurnResult, error) {
	var out bindings.OpenTurnResult
	tenant, conv := in.Snapshot.TenantID, in.Snapshot.ConversationID
	var extra *batchExtra
	if checkLookup(tenant, "conversation id", conv) == nil {
		extra = &batchExtra{
			queueFn: func(b *pgx.Batch) { b.Queue(sqlGetConversation, tenant, conv) },
			readFn: func(br pgx.BatchResults) error {
				var err error
				out.Conversation, out.HasConversation, err = collectOne(br, scanConversation)
				return err
			},
		}
	}
	res, err := s.openRun(ctx, in, extra)
	if err != nil {
		return bindings.OpenTurnResult{}, err
	}
	out.OpenRunResult = res
	if !out.HasConversation {
		out.Conversation = bindings.Conversation{}
	}
	return out, nil
}

// AppendUserMessage implements bindings.TurnOpener: AppendStepsAndMessage
// and the read of the history before the stored message in one round
// trip and one transaction (one more statement after the message's).
func (s *Store) AppendUserMessage(ctx context.Context, in bindings.UserMessageInput) (bindings.UserMessageResult, error) {
	steps, msg := in.Steps, in.Message
	if msg.TenantID != steps.TenantID {
		return bindings.UserMessageResult{}, invalid("the entries and the message are of different tenants")
	}
	if in.HistoryLimit < 1 {
		return bindings.UserMessageResult{}, invalid("the history limit is less than 1")
	}
	row, err := s.prepareMessage(msg)
	if err != nil {
		return bindings.UserMessageResult{}, err
	}
	var hist []bindings.ConversationMessage
	tail := &messageTail{row: row, extra: &batchExtra{
		queueFn: func(b *pgx.Batch) {
			b.Queue(sqlHistoryBefore, msg.TenantID, msg.ConversationID, row.id, int64(in.HistoryLimit))
		},
		readFn: func(br pgx.BatchResults) error {
			rows, err := br.Query()
			if err != nil {
				return err
			}
			hist, err = pgx.CollectRows(rows, scanMessage)
			return err
		},
	}}
	entries, appended, err := s.appendSteps(ctx, "append user message", steps, "", tail)
	if err != nil {
		return bindings.UserMessageResult{}, err
	}
	out := bindings.UserMessageResult{Entries: entries, Appended: appended}
	if out.Message, err = tail.ma.result(); err != nil {
		return out, err
	}
	slices.Reverse(hist)
	if hist == nil {
		hist = []bindings.ConversationMessage{}
	}
	out.History = hist
	return out, nil
}
