package memstore

import (
	"context"
	"encoding/binary"
	"slices"
	"sort"
	"time"
	"unicode/utf8"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/frozen"
)

// defaultListLimit is the page size when a list asks for Limit 0.
const defaultListLimit = 100

// tenantConvs is one tenant's conversations: by id, and in the reverse of
// list order (OpenedAt ASC, ID ASC; a list reads it from the end) for
// keyset pages found by binary search, so that a new conversation, the
// newest, is appended rather than inserted at the front (which moved every
// other one: O(n) per open).
type tenantConvs struct {
	byID  map[string]*convRec
	order []*convRec
}

// convRec is a conversation with its messages; msgs[i].Seq == i+1, so a
// read of the latest N slices the tail. byID indexes the messages by id
// once there are more than msgScan of them (fewer are scanned: no map to
// build per conversation).
type convRec struct {
	c    bindings.Conversation
	msgs msgLog
	byID map[string]int
	// The log's first chunks (newConvRec), inside the record: one
	// allocation per conversation instead of seven. The times hold
	// pointers and come first; the records and the text hold none and come
	// last, where the GC does not scan.
	chunks0  [1][]msgRec
	times0   [1][]time.Time
	texts0   [1][]byte
	created0 [convMsgs]time.Time
	msgs0    [convMsgs]msgRec
	text0    [convText]byte
}

// convMsgs is the number of messages a convRec holds itself: a turn with
// one tool call stores 4.
const convMsgs = 4

// convText is the size of the first text chunk, inside a convRec: what
// makes the record fill its allocation (1408 bytes with the runtime's
// 8-byte type header) to the byte, as runText does for a runRec.
const convText = 720

// newConvRec returns a record for c, its log in the record's chunks, and
// c's ids copied into the front of the first text chunk (see
// ownString): the caller keys the record by r.c.ID.
func newConvRec(c bindings.Conversation) *convRec {
	r := &convRec{c: c}
	text := ownString(ownString(r.text0[:], &r.c.TenantID), &r.c.ID)
	text = ownString(ownString(ownString(text, &r.c.ProjectID), &r.c.AgentID), &r.c.AgentVersion)
	r.chunks0[0], r.times0[0], r.texts0[0] = r.msgs0[:0], r.created0[:0], text[:0]
	r.msgs.chunks, r.msgs.times, r.msgs.text = r.chunks0[:], r.times0[:], r.texts0[:]
	return r
}

// msgScan is the number of messages up to which find scans them.
const msgScan = 16

// find returns the index of the message with id.
func (r *convRec) find(id string) (int, bool) {
	if r.byID != nil {
		i, ok := r.byID[id]
		return i, ok
	}
	for i := r.msgs.n - 1; i >= 0; i-- {
		if rec := r.msgs.at(i); int(rec.lens[msgID]) == len(id) && r.msgs.str(rec, msgID) == id {
			return i, true
		}
	}
	return 0, false
}

// add appends m (whose id find did not find).
func (r *convRec) add(m *bindings.ConversationMessage) {
	r.msgs.add(m)
	switch {
	case r.byID != nil:
		r.byID[r.msgs.str(r.msgs.at(r.msgs.n-1), msgID)] = r.msgs.n - 1
	case r.msgs.n > msgScan:
		r.byID = make(map[string]int, 2*r.msgs.n)
		for i := range r.msgs.n {
			r.byID[r.msgs.str(r.msgs.at(i), msgID)] = i
		}
	}
}

// msgChunk is how many messages a chunk of a msgLog holds.
const msgChunk = 1024

// msgLog is a conversation's messages in append order, in chunks of
// msgChunk records (the last one partly filled): an append never copies
// the messages before it, so a conversation of 100,000 messages appends at
// the cost of one of 10 (one contiguous slice copied all of them at each
// growth, a pointer write barrier per field while GC ran).
//
// A message is kept compactly, for the garbage collector: a Store keeps
// every message it was given and each GC cycle marks them all again. A
// bindings.ConversationMessage holds thirteen pointers; a msgRec none: its
// strings, metadata and tool calls are copied into the log's text chunks,
// its role is a code, its tenant and conversation are the conversation's
// own, and its time (whose location pointer a store's clock sets to
// time.Local or UTC: never a heap object) is in times, a chunk of times
// beside each chunk of records. A ConversationMessage is built again when
// one is read (msg).
type msgLog struct {
	chunks [][]msgRec
	times  [][]time.Time // times[c][k] is the time of chunks[c][k]
	// text holds the records' strings; bytes once written never change,
	// so the strings read back alias them. Only the last chunk has room.
	text [][]byte
	n    int
}

// msgRec is one stored message (see msgLog).
type msgRec struct {
	turn  int
	chunk uint32 // the text chunk of the strings,
	off   uint32 // where they start in it, one after the other:
	lens  [msgTexts]uint32
	// calls is 1 + the number of tool calls (0: nil tool calls), whose
	// ids, names and arguments follow the strings in the text (see
	// appendCalls).
	calls uint32
	role  uint8 // roleCode
}

// roleCode is the code of a valid role (appendMessage refuses any other).
func roleCode(r bindings.MessageRole) uint8 {
	switch r {
	case bindings.RoleUser:
		return 1
	case bindings.RoleAgent:
		return 2
	case bindings.RoleTool:
		return 3
	case bindings.RoleSystem:
		return 4
	}
	panic("memstore: role " + string(r) + " is not valid")
}

var codeRole = [...]bindings.MessageRole{1: bindings.RoleUser, 2: bindings.RoleAgent, 3: bindings.RoleTool, 4: bindings.RoleSystem}

// The strings of a msgRec, in their order in the text; the tool calls
// come after them.
const (
	msgID = iota
	msgContent
	msgToolCallID
	msgRunID
	msgParticipantID
	msgMetadata
	msgCalls // the tool calls' bytes
	msgTexts
)

// textChunk is the size of a conversation's first text chunk outside its
// record (a turn with one tool call stores about 600 bytes of ids,
// content, metadata and tool calls: convText holds them); later ones
// double, up to 64 KB.
const textChunk = 640

// at returns the i-th record (0-based; Seq i+1).
func (l *msgLog) at(i int) *msgRec {
	return &l.chunks[i/msgChunk][i%msgChunk]
}

// bytes returns the k-th text of rec, aliasing the text (nil when empty).
func (l *msgLog) bytes(rec *msgRec, k int) []byte {
	n := rec.lens[k]
	if n == 0 {
		return nil
	}
	off := rec.off
	for _, m := range rec.lens[:k] {
		off += m
	}
	return l.text[rec.chunk][off : off+n : off+n]
}

// str returns the k-th string of rec, aliasing the text.
func (l *msgLog) str(rec *msgRec, k int) string {
	return frozen.String(l.bytes(rec, k))
}

// msg returns the i-th message of conversation c as a caller's own copy:
// its strings alias the text (never written again), its tool calls and
// metadata are copies.
func (l *msgLog) msg(i int, c *bindings.Conversation) bindings.ConversationMessage {
	rec := l.at(i)
	return bindings.ConversationMessage{
		TenantID: c.TenantID, ConversationID: c.ID, ID: l.str(rec, msgID),
		Seq: int64(i + 1), Role: codeRole[rec.role], Content: l.str(rec, msgContent),
		ToolCalls: l.toolCalls(rec), ToolCallID: l.str(rec, msgToolCallID),
		TurnNumber: rec.turn, RunID: l.str(rec, msgRunID), ParticipantID: l.str(rec, msgParticipantID),
		Metadata: cloneJSON(l.bytes(rec, msgMetadata)), CreatedAt: l.times[i/msgChunk][i%msgChunk],
	}
}

// callHead is the size of a tool call's head in the text: the lengths of
// its id, name and arguments.
const callHead = 12

// callsLen is the size of tcs in the text (appendCalls).
func callsLen(tcs []bindings.ToolCall) int {
	n := 0
	for i := range tcs {
		n += callHead + len(tcs[i].ID) + len(tcs[i].Name) + len(tcs[i].Arguments)
	}
	return n
}

// appendCalls appends tcs as a store holds them (storedToolCalls): for
// each, the lengths of its id, name and arguments (uint32, little endian),
// then those bytes. The ids and names are valid UTF-8 here (storedAsIs;
// the others go through storedToolCalls first).
func appendCalls(b []byte, tcs []bindings.ToolCall) []byte {
	for i := range tcs {
		tc := &tcs[i]
		b = binary.LittleEndian.AppendUint32(b, uint32(len(tc.ID)))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(tc.Name)))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(tc.Arguments)))
		b = append(append(append(b, tc.ID...), tc.Name...), tc.Arguments...)
	}
	return b
}

// toolCalls returns a copy of rec's tool calls: ids and names alias the
// text, the arguments are the caller's own (nil when empty, as cloneJSON
// gives them).
func (l *msgLog) toolCalls(rec *msgRec) []bindings.ToolCall {
	if rec.calls == 0 {
		return nil
	}
	out := make([]bindings.ToolCall, rec.calls-1)
	b := l.bytes(rec, msgCalls)
	for i := range out {
		idLen := binary.LittleEndian.Uint32(b)
		nameLen := binary.LittleEndian.Uint32(b[4:])
		argLen := binary.LittleEndian.Uint32(b[8:])
		b = b[callHead:]
		out[i].ID = frozen.String(b[:idLen])
		out[i].Name = frozen.String(b[idLen : idLen+nameLen])
		out[i].Arguments = cloneJSON(b[idLen+nameLen : idLen+nameLen+argLen])
		b = b[idLen+nameLen+argLen:]
	}
	return out
}

// add appends m, copying its strings, metadata and tool calls (which hold
// what a store keeps: see storedToolCalls) into the text. The first chunk
// grows as a slice does (a short conversation holds no more than it
// needs); later ones are allocated whole.
func (l *msgLog) add(m *bindings.ConversationMessage) {
	k := len(l.chunks)
	switch {
	case k == 0:
		l.chunks = append(l.chunks, make([]msgRec, 0, convMsgs))
		l.times = append(l.times, make([]time.Time, 0, convMsgs))
		k = 1
	case len(l.chunks[k-1]) == msgChunk:
		l.chunks = append(l.chunks, make([]msgRec, 0, msgChunk))
		l.times = append(l.times, make([]time.Time, 0, msgChunk))
		k++
	}
	strs := [msgCalls]string{m.ID, m.Content, m.ToolCallID, m.RunID, m.ParticipantID}
	rec := msgRec{turn: m.TurnNumber, role: roleCode(m.Role)}
	if m.ToolCalls != nil {
		rec.calls = uint32(len(m.ToolCalls)) + 1
	}
	need := 0
	for i, str := range strs[:msgMetadata] {
		rec.lens[i] = uint32(len(str))
		need += len(str)
	}
	rec.lens[msgMetadata] = uint32(len(m.Metadata))
	rec.lens[msgCalls] = uint32(callsLen(m.ToolCalls))
	need += int(rec.lens[msgMetadata] + rec.lens[msgCalls])
	t := len(l.text) - 1
	if t < 0 || cap(l.text[t])-len(l.text[t]) < need {
		size := textChunk
		if t >= 0 {
			size = min(2*cap(l.text[t]), 64<<10)
		}
		l.text = append(l.text, make([]byte, 0, max(size, need)))
		t++
	}
	rec.chunk, rec.off = uint32(t), uint32(len(l.text[t]))
	b := l.text[t]
	for _, str := range strs[:msgMetadata] {
		b = append(b, str...)
	}
	b = appendCalls(append(b, m.Metadata...), m.ToolCalls)
	l.text[t] = b
	l.chunks[k-1] = append(l.chunks[k-1], rec)
	l.times[k-1] = append(l.times[k-1], m.CreatedAt)
	l.n++
}

// before reports whether a conversation at (openedAt a, id a) lists before
// b: newer first, then the larger id first.
func before(a, b bindings.ConversationPageCursor) bool {
	if !a.OpenedAt.Equal(b.OpenedAt) {
		return a.OpenedAt.After(b.OpenedAt)
	}
	return a.ID > b.ID
}

func (r *convRec) pos() bindings.ConversationPageCursor {
	return bindings.ConversationPageCursor{OpenedAt: r.c.OpenedAt, ID: r.c.ID}
}

// at returns the index where cur is, or would be inserted; the
// conversations listed after cur are those below it.
func (tc *tenantConvs) at(cur bindings.ConversationPageCursor) int {
	return sort.Search(len(tc.order), func(i int) bool { return !before(cur, tc.order[i].pos()) })
}

func cloneConversation(c bindings.Conversation) bindings.Conversation {
	c.ClosedAt = cloneTime(c.ClosedAt)
	return c
}

// conv finds a conversation; the caller holds convMu.
func (s *Store) conv(tenantID, id string) (*convRec, error) {
	if tc := s.convs[tenantID]; tc != nil {
		if r := tc.byID[id]; r != nil {
			return r, nil
		}
	}
	return nil, &agents.ConversationNotFoundError{ConversationID: id}
}

// OpenConversation opens a conversation, or returns the stored one when
// (tenant, ID) exists with the same agent id and version.
func (s *Store) OpenConversation(ctx context.Context, in bindings.OpenConversationInput) (bindings.Conversation, error) {
	if err := checkedCall(ctx, bindings.CheckOpenConversation(in)); err != nil {
		return bindings.Conversation{}, err
	}
	s.convMu.Lock()
	defer s.convMu.Unlock()
	tc := s.convs[in.TenantID]
	if tc == nil {
		tc = &tenantConvs{byID: map[string]*convRec{}}
		s.convs[in.TenantID] = tc
	}
	if r := tc.byID[in.ID]; in.ID != "" && r != nil {
		if r.c.AgentID != in.AgentID || r.c.AgentVersion != in.AgentVersion {
			return bindings.Conversation{}, &agents.AgentVersionMismatchError{
				Subject:  "conversation " + in.ID,
				Expected: r.c.AgentID + "@" + r.c.AgentVersion,
				Actual:   in.AgentID + "@" + in.AgentVersion,
			}
		}
		return cloneConversation(r.c), nil
	}
	id, err := s.newID(in.ID, func(id string) bool { return tc.byID[id] != nil })
	if err != nil {
		return bindings.Conversation{}, err
	}
	opened := in.OpenedAt
	if opened.IsZero() {
		opened = s.now()
	}
	r := newConvRec(bindings.Conversation{
		TenantID: in.TenantID, ID: id, ProjectID: in.ProjectID,
		AgentID: in.AgentID, AgentVersion: in.AgentVersion,
		Title: in.Title, ParticipantID: in.ParticipantID,
		Status: bindings.ConversationOpen, OpenedAt: opened, LastActivityAt: opened,
	})
	tc.byID[r.c.ID] = r
	i := tc.at(r.pos())
	tc.order = slices.Insert(tc.order, i, r)
	return cloneConversation(r.c), nil
}

// GetConversation returns a tenant's conversation.
func (s *Store) GetConversation(ctx context.Context, tenantID, conversationID string) (bindings.Conversation, error) {
	if err := lookupCall(ctx, tenantID, "conversation id", conversationID); err != nil {
		return bindings.Conversation{}, err
	}
	s.convMu.RLock()
	defer s.convMu.RUnlock()
	r, err := s.conv(tenantID, conversationID)
	if err != nil {
		return bindings.Conversation{}, err
	}
	return cloneConversation(r.c), nil
}

// ListConversations returns the first Limit matching conversations, newest
// first.
func (s *Store) ListConversations(ctx context.Context, in bindings.ListConversationsInput) ([]bindings.Conversation, error) {
	p, err := s.ListConversationsPage(ctx, bindings.ListConversationsPageInput{ListConversationsInput: in})
	return p.Conversations, err
}

// ListConversationsPage returns the page after in.Cursor. Finding the
// cursor costs O(log n); the page costs the rows it scans.
func (s *Store) ListConversationsPage(ctx context.Context, in bindings.ListConversationsPageInput) (bindings.ConversationPage, error) {
	if err := checkedCall(ctx, bindings.CheckListConversationsPage(in)); err != nil {
		return bindings.ConversationPage{}, err
	}
	limit := in.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	s.convMu.RLock()
	defer s.convMu.RUnlock()
	page := bindings.ConversationPage{Conversations: []bindings.Conversation{}}
	tc := s.convs[in.TenantID]
	if tc == nil {
		return page, nil
	}
	end := len(tc.order) // the conversations listed are tc.order[:end], from its end
	if in.Cursor != nil {
		end = tc.at(*in.Cursor)
	}
	page.Conversations = make([]bindings.Conversation, 0, min(limit, end))
	for k := end - 1; k >= 0; k-- {
		r := tc.order[k]
		if !matches(r.c, in.ListConversationsInput) {
			continue
		}
		if len(page.Conversations) == limit {
			last := page.Conversations[limit-1]
			page.Next = &bindings.ConversationPageCursor{OpenedAt: last.OpenedAt, ID: last.ID}
			break
		}
		page.Conversations = append(page.Conversations, cloneConversation(r.c))
	}
	return page, nil
}

func matches(c bindings.Conversation, in bindings.ListConversationsInput) bool {
	return (in.ProjectID == "" || c.ProjectID == in.ProjectID) &&
		(in.AgentID == "" || c.AgentID == in.AgentID) &&
		(in.Status == "" || c.Status == in.Status)
}

// CloseConversation closes a conversation; closing a closed one is a no-op.
func (s *Store) CloseConversation(ctx context.Context, tenantID, conversationID string) error {
	if err := lookupCall(ctx, tenantID, "conversation id", conversationID); err != nil {
		return err
	}
	s.convMu.Lock()
	defer s.convMu.Unlock()
	r, err := s.conv(tenantID, conversationID)
	if err != nil {
		return err
	}
	if r.c.Status != bindings.ConversationClosed {
		now := s.now()
		r.c.Status = bindings.ConversationClosed
		r.c.ClosedAt = &now
	}
	return nil
}

// DeleteConversation removes a conversation and its messages; deleting a
// missing one is a no-op.
func (s *Store) DeleteConversation(ctx context.Context, tenantID, conversationID string) error {
	if err := lookupCall(ctx, tenantID, "conversation id", conversationID); err != nil {
		return err
	}
	s.convMu.Lock()
	defer s.convMu.Unlock()
	tc := s.convs[tenantID]
	if tc == nil {
		return nil
	}
	r := tc.byID[conversationID]
	if r == nil {
		return nil
	}
	delete(tc.byID, conversationID)
	if i := tc.at(r.pos()); i < len(tc.order) && tc.order[i] == r {
		tc.order = slices.Delete(tc.order, i, i+1)
	}
	return nil
}

// AppendMessage appends a message; a message id already stored returns the
// stored message and stores nothing (also once the conversation is
// closed, so a replayed append stays idempotent). A user message under a
// turn number the conversation already has is *agents.ConversationBusyError,
// checked under the same lock as the append.
func (s *Store) AppendMessage(ctx context.Context, in bindings.AppendMessageInput) (bindings.ConversationMessage, error) {
	return s.appendMessage(ctx, in, false)
}

// appendMessage is AppendMessage; trusted skips the checks of the ids and
// JSON a journal.CommitInput.Trusted caller vouches for.
func (s *Store) appendMessage(ctx context.Context, in bindings.AppendMessageInput, trusted bool) (bindings.ConversationMessage, error) {
	if err := checkedCall(ctx, bindings.CheckAppendMessage(in, trusted)); err != nil {
		return bindings.ConversationMessage{}, err
	}
	s.convMu.Lock()
	defer s.convMu.Unlock()
	r, err := s.conv(in.TenantID, in.ConversationID)
	if err != nil {
		return bindings.ConversationMessage{}, err
	}
	return s.addMessage(r, in, trusted)
}

// addMessage is AppendMessage of a checked message to the conversation r,
// under convMu.
func (s *Store) addMessage(r *convRec, in bindings.AppendMessageInput, trusted bool) (bindings.ConversationMessage, error) {
	if in.ID != "" {
		if i, ok := r.find(in.ID); ok {
			return r.msgs.msg(i, &r.c), nil
		}
	}
	if r.c.Status == bindings.ConversationClosed {
		return bindings.ConversationMessage{}, &agents.ConversationClosedError{ConversationID: in.ConversationID}
	}
	if in.TurnTaken(r.c.TurnCount) {
		return bindings.ConversationMessage{}, &agents.ConversationBusyError{ConversationID: in.ConversationID, TurnNumber: in.TurnNumber}
	}
	id, err := s.newID(in.ID, func(id string) bool { _, ok := r.find(id); return ok })
	if err != nil {
		return bindings.ConversationMessage{}, err
	}
	created := in.CreatedAt
	if created.IsZero() {
		created = s.now()
	}
	m := bindings.ConversationMessage{
		TenantID: in.TenantID, ConversationID: in.ConversationID, ID: id,
		Seq: int64(r.msgs.n + 1), Role: in.Role, Content: in.Content,
		ToolCalls: in.ToolCalls, ToolCallID: in.ToolCallID,
		TurnNumber: in.TurnNumber, RunID: in.RunID, ParticipantID: in.ParticipantID, Metadata: in.Metadata,
		CreatedAt: created,
	}
	asIs := storedAsIs(in.ToolCalls)
	if !asIs {
		m.ToolCalls = storedToolCalls(in.ToolCalls)
	}
	r.add(&m) // copies what it keeps
	r.c.MessageCount++
	r.c.TurnCount = max(r.c.TurnCount, in.TurnNumber)
	if created.After(r.c.LastActivityAt) {
		r.c.LastActivityAt = created
	}
	if trusted && asIs {
		// The same message built from the caller's own values, not the
		// store's: no copy.
		return m, nil
	}
	// The caller's own copy of what the store kept.
	if asIs {
		m.ToolCalls = cloneToolCalls(in.ToolCalls)
	}
	m.Metadata = cloneJSON(in.Metadata)
	return m, nil
}

// storedAsIs reports whether storedToolCalls(tcs) holds what tcs holds
// (every id and name valid UTF-8, which jsonText leaves as it is).
func storedAsIs(tcs []bindings.ToolCall) bool {
	for i := range tcs {
		if !utf8.ValidString(tcs[i].ID) || !utf8.ValidString(tcs[i].Name) {
			return false
		}
	}
	return true
}

// ReadMessages returns the latest Limit messages (before BeforeSeq) in
// append order, in O(Limit).
func (s *Store) ReadMessages(ctx context.Context, in bindings.ReadMessagesInput) ([]bindings.ConversationMessage, error) {
	if err := lookupCall(ctx, in.TenantID, "conversation id", in.ConversationID); err != nil {
		return nil, err
	}
	s.convMu.RLock()
	defer s.convMu.RUnlock()
	r, err := s.conv(in.TenantID, in.ConversationID)
	if err != nil {
		return nil, err
	}
	end := int64(r.msgs.n)
	if in.BeforeSeq > 0 {
		end = min(end, in.BeforeSeq-1)
	}
	start := int64(0)
	if in.Limit >= 0 {
		start = max(0, end-int64(in.Limit))
	}
	out := make([]bindings.ConversationMessage, 0, end-start)
	for i := start; i < end; i++ {
		out = append(out, r.msgs.msg(int(i), &r.c))
	}
	return out, nil
}
