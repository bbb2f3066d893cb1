package pgstore

import (
	"context"
	"encoding/binary"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// defaultListLimit is the page size of a list with Limit 0.
const defaultListLimit = 100

const conversationCols = `tenant_id, id, project_id, agent_id, agent_version, title, participant_id,
	status, turn_count, message_count, opened_at, last_activity_at, closed_at`

const messageCols = `tenant_id, conversation_id, id, seq, role, content, tool_calls, tool_call_id,
	turn_number, run_id, metadata, created_at, participant_id`

const sqlOpenConversation = `INSERT INTO agent_conversations
	(tenant_id, id, project_id, agent_id, agent_version, title, participant_id, status, opened_at, last_activity_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, 'open', $8, $8)
	ON CONFLICT (tenant_id, id) DO NOTHING`

const sqlGetConversation = `SELECT ` + conversationCols + ` FROM agent_conversations WHERE tenant_id = $1 AND id = $2`

// sqlListConversations is keyset pagination: rows strictly after the cursor
// ($5, $6) in (opened_at DESC, id DESC) order, served by
// agent_conversations_opened_idx.
const sqlListConversations = `SELECT ` + conversationCols + ` FROM agent_conversations
	WHERE tenant_id = $1
	  AND ($2 = '' OR project_id = $2)
	  AND ($3 = '' OR agent_id = $3)
	  AND ($4 = '' OR status = $4)
	  AND ($5::timestamptz IS NULL OR (opened_at, id) < ($5::timestamptz, $6::text))
	ORDER BY opened_at DESC, id DESC
	LIMIT $7`

const sqlCloseConversation = `UPDATE agent_conversations
	SET status = 'closed', closed_at = COALESCE(closed_at, $3)
	WHERE tenant_id = $1 AND id = $2`

const sqlDeleteConversation = `DELETE FROM agent_conversations WHERE tenant_id = $1 AND id = $2`

const sqlConversationExists = `SELECT EXISTS (SELECT 1 FROM agent_conversations WHERE tenant_id = $1 AND id = $2)`

// sqlReadMessages reads the newest $4 messages before seq $3 by walking
// agent_conversation_messages_seq_idx backwards: O($4).
const sqlReadMessages = `SELECT ` + messageCols + ` FROM agent_conversation_messages
	WHERE tenant_id = $1 AND conversation_id = $2 AND seq < $3
	ORDER BY seq DESC
	LIMIT $4`

// OpenConversation implements bindings.ConversationBinding.
func (s *Store) OpenConversation(ctx context.Context, in bindings.OpenConversationInput) (bindings.Conversation, error) {
	if err := bindings.CheckOpenConversation(in); err != nil {
		return bindings.Conversation{}, err
	}
	id := in.ID
	if id == "" {
		id = s.ids()
	}
	at := s.stamp(in.OpenedAt)
	var c bindings.Conversation
	var found bool
	err := s.batch(ctx, "open conversation", in.TenantID, func(b *pgx.Batch) {
		b.Queue(sqlOpenConversation, in.TenantID, id, in.ProjectID, in.AgentID, in.AgentVersion, encodeText(in.Title), in.ParticipantID, at)
		b.Queue(sqlGetConversation, in.TenantID, id)
	}, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		return collectOneInto(br, &c, &found, scanConversation)
	})
	if err != nil {
		return bindings.Conversation{}, err
	}
	if !found {
		return bindings.Conversation{}, &agents.PersistenceError{Op: "open conversation", Err: pgx.ErrNoRows}
	}
	if c.AgentID != in.AgentID || c.AgentVersion != in.AgentVersion {
		return bindings.Conversation{}, &agents.AgentVersionMismatchError{
			Subject:  "conversation " + id,
			Expected: c.AgentID + "@" + c.AgentVersion,
			Actual:   in.AgentID + "@" + in.AgentVersion,
		}
	}
	return c, nil
}

// GetConversation implements bindings.ConversationBinding.
func (s *Store) GetConversation(ctx context.Context, tenantID, conversationID string) (bindings.Conversation, error) {
	return getByID(ctx, s, "get conversation", tenantID, "conversation id", conversationID, nil, sqlGetConversation, scanConversation,
		func() error { return &agents.ConversationNotFoundError{ConversationID: conversationID} })
}

// ListConversations implements bindings.ConversationBinding.
func (s *Store) ListConversations(ctx context.Context, in bindings.ListConversationsInput) ([]bindings.Conversation, error) {
	page, err := s.listConversations(ctx, bindings.ListConversationsPageInput{ListConversationsInput: in}, false)
	if err != nil {
		return nil, err
	}
	return page.Conversations, nil
}

// ListConversationsPage implements bindings.ConversationBinding with keyset
// pagination on (opened_at DESC, id DESC): a page is the rows strictly
// after the cursor, so rows inserted between pages never shift or repeat
// the rows of later pages.
func (s *Store) ListConversationsPage(ctx context.Context, in bindings.ListConversationsPageInput) (bindings.ConversationPage, error) {
	return s.listConversations(ctx, in, true)
}

func (s *Store) listConversations(ctx context.Context, in bindings.ListConversationsPageInput, paged bool) (bindings.ConversationPage, error) {
	if err := bindings.CheckListConversationsPage(in); err != nil {
		return bindings.ConversationPage{}, err
	}
	limit := in.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	var curAt *time.Time
	var curID string
	if in.Cursor != nil {
		t := in.Cursor.OpenedAt.UTC()
		curAt, curID = &t, in.Cursor.ID
	}
	fetch := limit
	if paged {
		fetch++ // one more row tells whether a next page exists
	}
	var list []bindings.Conversation
	err := s.batch(ctx, "list conversations", in.TenantID, func(b *pgx.Batch) {
		b.Queue(sqlListConversations, in.TenantID, in.ProjectID, in.AgentID, string(in.Status), curAt, curID, fetch)
	}, func(br pgx.BatchResults) error {
		return collectInto(br, &list, scanConversation)
	})
	if err != nil {
		return bindings.ConversationPage{}, err
	}
	page := bindings.ConversationPage{Conversations: list}
	if len(list) > limit {
		page.Conversations = list[:limit]
		last := page.Conversations[limit-1]
		page.Next = &bindings.ConversationPageCursor{OpenedAt: last.OpenedAt, ID: last.ID}
	}
	if page.Conversations == nil {
		page.Conversations = []bindings.Conversation{}
	}
	return page, nil
}

// CloseConversation implements bindings.ConversationBinding.
func (s *Store) CloseConversation(ctx context.Context, tenantID, conversationID string) error {
	if err := bindings.CheckLookup(tenantID, "conversation id", conversationID); err != nil {
		return err
	}
	n, err := s.exec(ctx, "close conversation", tenantID, sqlCloseConversation, tenantID, conversationID, s.stamp(time.Time{}))
	if err != nil {
		return err
	}
	if n == 0 {
		return &agents.ConversationNotFoundError{ConversationID: conversationID}
	}
	return nil
}

// DeleteConversation implements bindings.ConversationBinding.
func (s *Store) DeleteConversation(ctx context.Context, tenantID, conversationID string) error {
	if err := bindings.CheckLookup(tenantID, "conversation id", conversationID); err != nil {
		return err
	}
	_, err := s.exec(ctx, "delete conversation", tenantID, sqlDeleteConversation, tenantID, conversationID)
	return err
}

// AppendMessage implements bindings.ConversationBinding. It locks the
// conversation row for the length of its one-round-trip transaction, so
// concurrent appends get distinct, increasing sequence numbers, and of
// concurrent user messages of one turn number exactly one is stored (the
// others are *agents.ConversationBusyError).
func (s *Store) AppendMessage(ctx context.Context, in bindings.AppendMessageInput) (bindings.ConversationMessage, error) {
	row, err := s.prepareMessage(in, false)
	if err != nil {
		return bindings.ConversationMessage{}, err
	}
	var ma messageAppend
	err = s.send(ctx, "append message", func(b *pgx.Batch) {
		ma.queue(b, row, nil, "", row.at)
	}, ma.read)
	if err != nil {
		return bindings.ConversationMessage{}, err
	}
	return ma.result()
}

// messageRow is a message to append, validated and encoded.
type messageRow struct {
	in                  bindings.AppendMessageInput
	id                  string
	toolCalls, metadata []byte
	at                  time.Time
}

// prepareMessage validates a message to append and encodes its payloads.
func (s *Store) prepareMessage(in bindings.AppendMessageInput, trusted bool) (messageRow, error) {
	if err := bindings.CheckAppendMessage(in, trusted); err != nil {
		return messageRow{}, err
	}
	row := messageRow{in: in, id: in.ID, at: s.stamp(in.CreatedAt)}
	if row.id == "" {
		row.id = s.ids()
	}
	var err error
	if len(in.ToolCalls) > 0 {
		if row.toolCalls, err = Wrap(in.ToolCalls); err != nil {
			return messageRow{}, err
		}
	}
	if row.metadata, err = wrapOptChecked("message metadata", in.Metadata, true); err != nil { // checked above
		return messageRow{}, err
	}
	return row, nil
}

// sqlAppendMessageFn is one call of kindgi_append_message (migration
// 0007): the lock, the checks, the append and the read of the stored
// message in one statement.
const sqlAppendMessageFn = `SELECT o_status, o_turn_count, o_id, o_seq, o_role, o_content, o_tool_calls, o_tool_call_id,
	o_turn_number, o_run_id, o_metadata, o_created_at, o_participant_id, o_appended
	FROM kindgi_append_message($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`

// messageAppend is the statement of one message append in a batch and
// what it read.
type messageAppend struct {
	in        bindings.AppendMessageInput
	at        time.Time // the message's created_at
	status    string
	turnCount int // the conversation's, before the append
	m         bindings.ConversationMessage
	found     bool
}

// queue queues the append of row; when leaseRun is not nil the message is
// stored only if that run exists and owner (when not empty) holds its
// lease at now.
func (ma *messageAppend) queue(b *pgx.Batch, row messageRow, leaseRun *string, owner string, now time.Time) {
	in := row.in
	ma.in, ma.at = in, row.at
	b.Queue(sqlAppendMessageFn, in.TenantID, in.ConversationID, row.id, string(in.Role), encodeText(in.Content),
		textArg(row.toolCalls), in.ToolCallID, in.TurnNumber, in.RunID, textArg(row.metadata), row.at, in.ParticipantID,
		leaseRun, owner, now)
}

// read reads the result of the statement queue queued.
func (ma *messageAppend) read(br pgx.BatchResults) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		return rows.Err()
	}
	var (
		status, id      *string
		turnCount, turn *int32
		seq             *int64
		role, content   *string
		toolCalls, meta []byte
		toolCallID, run *string
		created         *time.Time
		participant     *string
		appended        *bool
	)
	if err := rows.Scan(&status, &turnCount, &id, &seq, &role, &content, &toolCalls, &toolCallID, &turn, &run, &meta, &created, &participant, &appended); err != nil {
		return err
	}
	if err := ma.fill(status, turnCount, id, seq, role, content, toolCalls, meta, toolCallID, run, created, participant, turn, appended); err != nil {
		return err
	}
	return rows.Err()
}

// fill takes the row of kindgi_append_message.
func (ma *messageAppend) fill(status *string, turnCount *int32, id *string, seq *int64, role, content *string, toolCalls, meta []byte,
	toolCallID, run *string, created *time.Time, participant *string, turn *int32, appended *bool) error {
	if status != nil {
		ma.status = *status
	}
	if turnCount != nil {
		ma.turnCount = int(*turnCount)
	}
	if id == nil || seq == nil {
		return nil
	}
	if appended != nil && *appended {
		ma.m, ma.found = ma.appended(*id, *seq), true
		return nil
	}
	m := bindings.ConversationMessage{TenantID: ma.in.TenantID, ConversationID: ma.in.ConversationID, ID: *id, Seq: *seq}
	m.Role, m.Content = bindings.MessageRole(deref(role)), decodeText(deref(content))
	m.ToolCallID, m.RunID, m.ParticipantID = deref(toolCallID), deref(run), deref(participant)
	if turn != nil {
		m.TurnNumber = int(*turn)
	}
	if created != nil {
		m.CreatedAt = utc(*created)
	}
	if toolCalls != nil {
		if err := UnwrapInto(toolCalls, &m.ToolCalls); err != nil {
			return err
		}
	}
	var err error
	if m.Metadata, err = unwrapOpt(meta); err != nil {
		return err
	}
	ma.m, ma.found = m, true
	return nil
}

// appended is the message this append stored, built from its input as a
// read would return it.
func (ma *messageAppend) appended(id string, seq int64) bindings.ConversationMessage {
	in := ma.in
	m := bindings.ConversationMessage{
		TenantID: in.TenantID, ConversationID: in.ConversationID, ID: id, Seq: seq, Role: in.Role, Content: in.Content,
		ToolCallID: in.ToolCallID, TurnNumber: in.TurnNumber, RunID: in.RunID, Metadata: compacted(in.Metadata),
		CreatedAt: ma.at, ParticipantID: in.ParticipantID,
	}
	if len(in.ToolCalls) > 0 {
		m.ToolCalls = slices.Clone(in.ToolCalls)
		for i := range m.ToolCalls {
			m.ToolCalls[i].Arguments = compacted(m.ToolCalls[i].Arguments)
		}
	}
	return m
}

// deref is *p, or "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// result is the stored message, or why there is none.
func (ma *messageAppend) result() (bindings.ConversationMessage, error) {
	conversationID := ma.in.ConversationID
	switch {
	case ma.status == "":
		return bindings.ConversationMessage{}, &agents.ConversationNotFoundError{ConversationID: conversationID}
	case ma.found:
		return ma.m, nil
	case ma.status == string(bindings.ConversationOpen) && ma.in.TurnTaken(ma.turnCount):
		return bindings.ConversationMessage{}, &agents.ConversationBusyError{ConversationID: conversationID, TurnNumber: ma.in.TurnNumber}
	default:
		return bindings.ConversationMessage{}, &agents.ConversationClosedError{ConversationID: conversationID}
	}
}

// ReadMessages implements bindings.ConversationBinding: one backward index
// scan of at most Limit rows.
func (s *Store) ReadMessages(ctx context.Context, in bindings.ReadMessagesInput) ([]bindings.ConversationMessage, error) {
	if err := bindings.CheckLookup(in.TenantID, "conversation id", in.ConversationID); err != nil {
		return nil, err
	}
	before := int64(math.MaxInt64)
	if in.BeforeSeq > 0 {
		before = in.BeforeSeq
	}
	var limit *int64
	if in.Limit >= 0 {
		l := int64(in.Limit)
		limit = &l
	}
	var exists bool
	var msgs []bindings.ConversationMessage
	err := s.batch(ctx, "read messages", in.TenantID, func(b *pgx.Batch) {
		b.Queue(sqlConversationExists, in.TenantID, in.ConversationID)
		b.Queue(sqlReadMessages, in.TenantID, in.ConversationID, before, limit)
	}, func(br pgx.BatchResults) error {
		if err := br.QueryRow().Scan(&exists); err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		msgs, err = collectMessages(rows, in.Limit)
		return err
	})
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, &agents.ConversationNotFoundError{ConversationID: in.ConversationID}
	}
	slices.Reverse(msgs)
	if msgs == nil {
		msgs = []bindings.ConversationMessage{}
	}
	return msgs, nil
}

// stmt is one SQL statement with its arguments.
type stmt struct {
	sql  string
	args []any
}

// writeThenRead runs, in one batch under the tenant's setting, the write w
// when it is not nil (its result discarded) and then r, a query of at most
// one row, which it scans; found is false when r returned no row.
func writeThenRead[T any](ctx context.Context, s *Store, op, tenantID string, scan pgx.RowToFunc[T], w *stmt, r stmt) (v T, found bool, err error) {
	list, err := writeThenReadAll(ctx, s, op, tenantID, scan, w, r)
	if err != nil || len(list) == 0 {
		return v, false, err
	}
	return list[0], true, nil
}

// writeThenReadAll runs, in one batch under the tenant's setting ("" for
// none), w when it is not nil (a write or a setting; its result discarded)
// and then the query r, whose rows it scans: never nil when err is nil.
func writeThenReadAll[T any](ctx context.Context, s *Store, op, tenantID string, scan pgx.RowToFunc[T], w *stmt, r stmt) ([]T, error) {
	var list []T
	err := s.batch(ctx, op, tenantID, func(b *pgx.Batch) {
		if w != nil {
			b.Queue(w.sql, w.args...)
		}
		b.Queue(r.sql, r.args...)
	}, func(br pgx.BatchResults) error {
		if w != nil {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		return collectInto(br, &list, scan)
	})
	if err != nil {
		return nil, err
	}
	if list == nil {
		list = []T{}
	}
	return list, nil
}

// getByID reads, under the tenant's setting and after the write w when it
// is not nil, the one record that query finds by its tenant ($1) and id
// ($2): the ids checked (id as field), and missing's error when there is
// no such record.
func getByID[T any](ctx context.Context, s *Store, op, tenantID, field, id string, w *stmt, query string, scan pgx.RowToFunc[T], missing func() error) (T, error) {
	var zero T
	if err := bindings.CheckLookup(tenantID, field, id); err != nil {
		return zero, err
	}
	v, found, err := writeThenRead(ctx, s, op, tenantID, scan, w, stmt{query, []any{tenantID, id}})
	if err != nil {
		return zero, err
	}
	if !found {
		return zero, missing()
	}
	return v, nil
}

// collectOne reads the next result of br, which holds at most one row.
func collectOne[T any](br pgx.BatchResults, scan pgx.RowToFunc[T]) (T, bool, error) {
	var list []T
	if err := collectInto(br, &list, scan); err != nil || len(list) == 0 {
		var zero T
		return zero, false, err
	}
	return list[0], true, nil
}

// collectOneInto is collectOne into *dst and *found.
func collectOneInto[T any](br pgx.BatchResults, dst *T, found *bool, scan pgx.RowToFunc[T]) error {
	var err error
	*dst, *found, err = collectOne(br, scan)
	return err
}

// collectInto reads the next result of br into *dst, each row scanned by
// scan.
func collectInto[T any](br pgx.BatchResults, dst *[]T, scan pgx.RowToFunc[T]) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	*dst, err = pgx.CollectRows(rows, scan)
	return err
}

func scanConversation(row pgx.CollectableRow) (bindings.Conversation, error) {
	var c bindings.Conversation
	var status string
	err := row.Scan(&c.TenantID, &c.ID, &c.ProjectID, &c.AgentID, &c.AgentVersion, &c.Title, &c.ParticipantID,
		&status, &c.TurnCount, &c.MessageCount, &c.OpenedAt, &c.LastActivityAt, &c.ClosedAt)
	if err != nil {
		return c, err
	}
	c.Status = bindings.ConversationStatus(status)
	c.Title = decodeText(c.Title)
	c.OpenedAt, c.LastActivityAt = utc(c.OpenedAt), utc(c.LastActivityAt)
	if c.ClosedAt != nil {
		t := utc(*c.ClosedAt)
		c.ClosedAt = &t
	}
	return c, nil
}

func scanMessage(row pgx.CollectableRow) (bindings.ConversationMessage, error) {
	var m bindings.ConversationMessage
	var role string
	var toolCalls, metadata []byte
	err := row.Scan(&m.TenantID, &m.ConversationID, &m.ID, &m.Seq, &role, &m.Content, &toolCalls, &m.ToolCallID,
		&m.TurnNumber, &m.RunID, &metadata, &m.CreatedAt, &m.ParticipantID)
	if err != nil {
		return m, err
	}
	m.Role = bindings.MessageRole(role)
	m.Content = decodeText(m.Content)
	m.CreatedAt = utc(m.CreatedAt)
	if toolCalls != nil {
		if err := UnwrapInto(toolCalls, &m.ToolCalls); err != nil {
			return m, err
		}
	}
	if m.Metadata, err = unwrapOpt(metadata); err != nil {
		return m, err
	}
	return m, nil
}

// Column positions of messageCols.
const (
	mcTenant = iota
	mcConversation
	mcID
	mcSeq
	mcRole
	mcContent
	mcToolCalls
	mcToolCallID
	mcTurn
	mcRun
	mcMetadata
	mcCreated
	mcParticipant
	mcCount
)

// maxPresize caps the room collectMessages reserves from a size hint.
const maxPresize = 1024

// collectMessages reads the rows of a query of messageCols, as
// pgx.CollectRows(rows, scanMessage) does, and returns the same values
// with fewer allocations: the slice is sized from sizeHint (the query's
// limit, 0 for none), a row's text columns share one string (a column
// equal to the row before's reuses its string), and the envelopes are
// read from the raw values without a copy. A row whose columns are not
// of the types and formats the schema and pgx give (text, bigint,
// integer, jsonb, timestamptz; NULL only in the jsonb columns) is read
// by scanMessage.
func collectMessages(rows pgx.Rows, sizeHint int) ([]bindings.ConversationMessage, error) {
	defer rows.Close()
	var msgs []bindings.ConversationMessage
	if sizeHint > 0 {
		msgs = make([]bindings.ConversationMessage, 0, min(sizeHint, maxPresize))
	}
	var (
		fast    bool   // the columns are as collectMessages reads them
		checked bool   // fast is set
		text    []byte // the text columns of the row being read
		doc     []byte // a tool_calls document being decoded
		prev    bindings.ConversationMessage
	)
	for rows.Next() {
		if !checked {
			fast, checked = fastMessageColumns(rows.FieldDescriptions()), true
		}
		raw := rows.RawValues()
		var created time.Time
		ok := fast && fastMessageRow(raw)
		if ok {
			created, ok = binaryTimestamptz(raw[mcCreated])
		}
		if !ok {
			m, err := scanMessage(rows)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, m)
			prev = m
			continue
		}
		var m bindings.ConversationMessage
		seq := int64(binary.BigEndian.Uint64(raw[mcSeq]))
		// The text columns: a column equal to the row before's reuses its
		// string; the others are gathered into text, made one string.
		cols := [...]int{mcTenant, mcConversation, mcID, mcRole, mcContent, mcToolCallID, mcRun, mcParticipant}
		dsts := [...]*string{&m.TenantID, &m.ConversationID, &m.ID, (*string)(&m.Role), &m.Content, &m.ToolCallID, &m.RunID, &m.ParticipantID}
		befores := [...]string{prev.TenantID, prev.ConversationID, "", string(prev.Role), "", "", prev.RunID, prev.ParticipantID}
		var ends [len(cols)]int
		text = text[:0]
		for i, col := range cols {
			if v := raw[col]; string(v) == befores[i] {
				*dsts[i], ends[i] = befores[i], -1
			} else {
				text = append(text, v...)
				ends[i] = len(text)
			}
		}
		all, start := string(text), 0
		for i, end := range ends {
			if end >= 0 {
				*dsts[i], start = all[start:end], end
			}
		}
		m.Content = decodeText(m.Content)
		m.Seq = seq
		m.TurnNumber = int(int32(binary.BigEndian.Uint32(raw[mcTurn])))
		m.CreatedAt = created
		if v := raw[mcToolCalls]; v != nil {
			var err error
			if doc, m.ToolCalls, err = unwrapToolCalls(doc[:0], v); err != nil {
				return nil, err
			}
		}
		if v := raw[mcMetadata]; v != nil {
			var err error
			if m.Metadata, err = unwrapStored(nil, v); err != nil {
				return nil, err
			}
		}
		msgs = append(msgs, m)
		prev = m
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return msgs, nil
}

// fastMessageColumns reports whether the columns of messageCols come in
// the types and formats collectMessages reads itself: text as text,
// bigint, integer and timestamptz in binary, jsonb as text.
func fastMessageColumns(fds []pgconn.FieldDescription) bool {
	if len(fds) != mcCount {
		return false
	}
	for i, fd := range fds {
		var ok bool
		switch i {
		case mcSeq:
			ok = fd.DataTypeOID == pgtype.Int8OID && fd.Format == pgtype.BinaryFormatCode
		case mcTurn:
			ok = fd.DataTypeOID == pgtype.Int4OID && fd.Format == pgtype.BinaryFormatCode
		case mcCreated:
			ok = fd.DataTypeOID == pgtype.TimestamptzOID && fd.Format == pgtype.BinaryFormatCode
		case mcToolCalls, mcMetadata:
			ok = fd.DataTypeOID == pgtype.JSONBOID && fd.Format == pgtype.TextFormatCode
		default:
			ok = fd.DataTypeOID == pgtype.TextOID && fd.Format == pgtype.TextFormatCode
		}
		if !ok {
			return false
		}
	}
	return true
}

// fastMessageRow reports whether collectMessages reads the raw values of
// a row itself: the fixed-size columns have their sizes, and only the
// jsonb columns are NULL.
func fastMessageRow(raw [][]byte) bool {
	if len(raw) != mcCount {
		return false
	}
	for i, v := range raw {
		switch i {
		case mcToolCalls, mcMetadata:
		case mcSeq, mcCreated:
			if len(v) != 8 {
				return false
			}
		case mcTurn:
			if len(v) != 4 {
				return false
			}
		default:
			if v == nil {
				return false
			}
		}
	}
	return true
}

// Microseconds from the Unix epoch to 2000-01-01, the epoch of
// timestamptz's binary form.
const microsecondsToY2K = 946_684_800 * 1_000_000

// binaryTimestamptz decodes the binary form of a timestamptz as pgx and
// utc would: the instant in UTC. ok is false for what it leaves to pgx:
// ±infinity, a time outside the years 1 to 9999 and the zero time.
func binaryTimestamptz(v []byte) (time.Time, bool) {
	us := int64(binary.BigEndian.Uint64(v))
	// The years 1 to 9999 but the zero time (0001-01-01 00:00 UTC), as
	// bounds on us (±infinity are outside them).
	if us <= y2kMicrosYear1 || us >= y2kMicrosYear10000 {
		return time.Time{}, false
	}
	t := time.Unix(microsecondsToY2K/1_000_000+us/1_000_000, (microsecondsToY2K%1_000_000*1_000)+(us%1_000_000*1_000))
	return t.UTC(), true
}

// The microseconds from 2000-01-01 to 0001-01-01 and to 10000-01-01
// (UTC), the bounds of binaryTimestamptz.
var (
	y2kMicrosYear1     = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix()*1_000_000 - microsecondsToY2K
	y2kMicrosYear10000 = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()*1_000_000 - microsecondsToY2K
)
