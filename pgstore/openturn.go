package pgstore

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/storeio"
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

// readAfterJournal collects the run's journal, the statement queued just
// before e's, into *journal, then reads e's results.
func (e *batchExtra) readAfterJournal(br pgx.BatchResults, journal *[]bindings.JournalEntry) error {
	var err error
	if *journal, err = collectJournal(br); err != nil {
		return err
	}
	return e.read(br)
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

// sqlExpectMessages is kindgi_expect_messages (the baseline migration): it sets
// the tenant, locks conversation $2 (as the message append after it does)
// and fails, aborting the call's transaction, with SQLSTATE
// codeConversationChanged unless it holds $3 messages and none with id $4:
// the turn's read of it still stands. A missing conversation passes (the
// append after it reports it).
const sqlExpectMessages = `SELECT kindgi_expect_messages($1, $2, $3, $4)`

// codeConversationChanged is the SQLSTATE kindgi_expect_messages raises.
const codeConversationChanged = "KG001"

// openTurn serves the Driver: OpenRun and GetConversation of
// the snapshot's conversation in one round trip, one more statement in
// OpenRun's batch, read under OpenRun's transaction; with in.HistoryLimit,
// one more, ReadMessages' backward scan, whose result is the history when
// its newest message is the conversation's last (no message came between
// the two statements), and nil otherwise.
func (s *Store) openTurn(ctx context.Context, in storeio.OpenTurnInput) (storeio.OpenTurnResult, error) {
	var out storeio.OpenTurnResult
	tenant, conv := in.Snapshot.TenantID, in.Snapshot.ConversationID
	var extra *batchExtra
	switch {
	case bindings.CheckLookup(tenant, "conversation id", conv) != nil:
	case in.HistoryLimit > 0:
		extra = &batchExtra{
			queueFn: func(b *pgx.Batch) {
				b.Queue(sqlGetConversation, tenant, conv)
				b.Queue(sqlReadMessages, tenant, conv, int64(math.MaxInt64), int64(in.HistoryLimit))
			},
			readFn: func(br pgx.BatchResults) error {
				var err error
				out.Conversation, out.HasConversation, out.History, err = readConversationHistory(br, in.HistoryLimit, true)
				return err
			},
		}
	default:
		extra = &batchExtra{
			queueFn: func(b *pgx.Batch) { b.Queue(sqlGetConversation, tenant, conv) },
			readFn: func(br pgx.BatchResults) error {
				return collectOneInto(br, &out.Conversation, &out.HasConversation, scanConversation)
			},
		}
	}
	res, err := s.openRun(ctx, in.OpenRunInput, extra)
	if err != nil {
		return storeio.OpenTurnResult{}, err
	}
	out.OpenRunResult = res
	if !out.HasConversation {
		out.Conversation, out.History = bindings.Conversation{}, nil
	}
	return out, nil
}

// consistentHistory reports whether hist, the newest messages of
// conversation c read by the statement after c's, is what c's statement
// would have read: its newest message is c's last (seq = MessageCount:
// nothing was appended in between) or, for an empty conversation, there
// is none.
func consistentHistory(c bindings.Conversation, hist []bindings.ConversationMessage) bool {
	if len(hist) == 0 {
		return c.MessageCount == 0
	}
	return hist[0].Seq == int64(c.MessageCount) // newest first, as read
}

// appendUserMessage serves the Driver: AppendStepsAndMessage
// and the read of the history before the stored message in one round
// trip and one transaction (one more statement after the message's).
func (s *Store) appendUserMessage(ctx context.Context, in storeio.UserMessageInput) (storeio.UserMessageResult, error) {
	steps, msg := in.Steps, in.Message
	if msg.TenantID != steps.TenantID {
		return storeio.UserMessageResult{}, invalid("the entries and the message are of different tenants")
	}
	if in.HistoryLimit < 1 {
		return storeio.UserMessageResult{}, invalid("the history limit is less than 1")
	}
	row, err := s.prepareMessage(msg, false)
	if err != nil {
		return storeio.UserMessageResult{}, err
	}
	var hist []bindings.ConversationMessage
	tail := &messageTail{row: row, extra: &batchExtra{
		queueFn: func(b *pgx.Batch) {
			b.Queue(sqlHistoryBefore, msg.TenantID, msg.ConversationID, row.id, int64(in.HistoryLimit))
		},
		readFn: func(br pgx.BatchResults) error {
			return collectInto(br, &hist, scanMessage)
		},
	}}
	entries, appended, err := s.appendSteps(ctx, "append user message", steps, "", tail, false)
	if err != nil {
		return storeio.UserMessageResult{}, err
	}
	out := storeio.UserMessageResult{Entries: entries, Appended: appended}
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

// pgCode is the SQLSTATE of err when PostgreSQL raised it, "" otherwise.
func pgCode(err error) string {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code
	}
	return ""
}

// sqlRunOrSnapshotExists tells whether run $2 or its snapshot is stored.
const sqlRunOrSnapshotExists = `SELECT EXISTS (SELECT 1 FROM agent_runs WHERE tenant_id = $1 AND id = $2)
	OR EXISTS (SELECT 1 FROM agent_run_snapshots WHERE tenant_id = $1 AND run_id = $2)`

// sqlOpenNewRun is kindgi_open_new_run (the baseline migration): the snapshot and
// the run created, only if neither is stored (else SQLSTATE
// codeRunExists), then the conversation checked as sqlExpectMessages
// checks it.
const sqlOpenNewRun = `SELECT kindgi_open_new_run($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`

// codeRunExists is the SQLSTATE kindgi_open_new_run raises.
const codeRunExists = "KG002"

// readTurn serves the Driver: whether the run or
// its snapshot is stored, the conversation and its newest in.HistoryLimit
// messages (as openTurn reads them), in one read-only round trip: nothing
// is written, so its transaction's commit flushes nothing.
func (s *Store) readTurn(ctx context.Context, in storeio.OpenTurnInput) (storeio.ReadTurnResult, error) {
	st := in.Start
	if err := bindings.CheckLookup(st.TenantID, "run id", st.RunID); err != nil {
		return storeio.ReadTurnResult{}, err
	}
	tenant, conv := in.Snapshot.TenantID, in.Snapshot.ConversationID
	readConv := tenant == st.TenantID && bindings.CheckLookup(tenant, "conversation id", conv) == nil
	var out storeio.ReadTurnResult
	err := s.batch(ctx, "read turn", st.TenantID, func(b *pgx.Batch) {
		b.Queue(sqlRunOrSnapshotExists, st.TenantID, st.RunID)
		if readConv {
			b.Queue(sqlGetConversation, tenant, conv)
			if in.HistoryLimit > 0 {
				b.Queue(sqlReadMessages, tenant, conv, int64(math.MaxInt64), int64(in.HistoryLimit))
			}
		}
	}, func(br pgx.BatchResults) error {
		if err := br.QueryRow().Scan(&out.Exists); err != nil {
			return err
		}
		if !readConv {
			return nil
		}
		var err error
		out.Conversation, out.HasConversation, out.History, err = readConversationHistory(br, in.HistoryLimit, in.HistoryLimit > 0)
		return err
	})
	if err != nil {
		return storeio.ReadTurnResult{}, err
	}
	if out.Exists || !out.HasConversation {
		out.Conversation, out.HasConversation, out.History = bindings.Conversation{}, false, nil
	}
	return out, nil
}

// readConversationHistory reads the results of sqlGetConversation and,
// when withHistory, of the sqlReadMessages after it (the newest limit
// messages): the conversation, whether there is one, and its history
// oldest first — nil (no history read) when a message came between the
// two reads, so that the newest one read is not the conversation's last.
func readConversationHistory(br pgx.BatchResults, limit int, withHistory bool) (bindings.Conversation, bool, []bindings.ConversationMessage, error) {
	conv, has, err := collectOne(br, scanConversation)
	if err != nil || !withHistory {
		return conv, has, nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return conv, has, nil, err
	}
	hist, err := collectMessages(rows, limit)
	if err != nil || !has || !consistentHistory(conv, hist) {
		return conv, has, nil, err
	}
	slices.Reverse(hist)
	if hist == nil {
		hist = []bindings.ConversationMessage{}
	}
	return conv, has, hist, nil
}

// openNewRun is the statement an optimistic open's write sends first:
// kindgi_open_new_run, the snapshot and the run created only if neither
// is stored (bindings.ErrRunExists) and the conversation checked to hold
// count messages, none of them msgID (bindings.ErrConversationChanged).
func (s *Store) openNewRun(open storeio.OpenRunInput, count int, msgID string) (*batchExtra, error) {
	st, sn := open.Start, open.Snapshot
	if err := firstErr(checkSnapshot(sn), bindings.CheckStartRun(st)); err != nil {
		return nil, err
	}
	input, err := wrapOpt("snapshot input", sn.Input)
	if err != nil {
		return nil, err
	}
	status, err := bindings.StartStatus(st.Status)
	if err != nil {
		return nil, err
	}
	now := s.stamp(time.Time{})
	exp := now.Add(st.LeaseTTL).Truncate(time.Microsecond)
	snapAt := s.stamp(sn.CreatedAt)
	child := st.ParentRunID != ""
	return &batchExtra{
		queueFn: func(b *pgx.Batch) {
			if child {
				b.Queue(sqlSetParent, st.ParentRunID, st.ParentStepKey)
			}
			b.Queue(sqlOpenNewRun, st.TenantID, st.RunID, sn.FlowID, sn.FlowVersion, sn.AgentID, sn.AgentVersion,
				sn.ConversationID, sn.ProjectID, textArg(input), snapAt, st.Owner, exp, now, st.FlowID, st.FlowVersion, string(status),
				int32(count), msgID)
		},
		readFn: func(br pgx.BatchResults) error {
			if child {
				if _, err := br.Exec(); err != nil {
					return err
				}
			}
			_, err := br.Exec()
			switch pgCode(err) {
			case codeRunExists:
				return bindings.ErrRunExists
			case codeConversationChanged:
				return bindings.ErrConversationChanged
			}
			return err
		},
	}, nil
}

// expectMessages is the statement a count-checked message step sends
// first: kindgi_expect_messages, bindings.ErrConversationChanged unless
// the conversation holds count messages, none of them msgID.
func (s *Store) expectMessages(tenantID, convID string, count int, msgID string) *batchExtra {
	return &batchExtra{
		queueFn: func(b *pgx.Batch) {
			b.Queue(sqlExpectMessages, tenantID, convID, int32(count), msgID)
		},
		readFn: func(br pgx.BatchResults) error {
			_, err := br.Exec()
			if pgCode(err) == codeConversationChanged {
				return bindings.ErrConversationChanged
			}
			return err
		},
	}
}
