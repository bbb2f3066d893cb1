package bindingstest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// The message cases of RunConversationTests: appends, idempotency per
// message id, Seq, counts, and reading the latest N.

func (f *fixture) appendMsg(t *testing.T, tenant, conv, id, content string, turn int) bindings.ConversationMessage {
	t.Helper()
	m, err := f.Conversations.AppendMessage(f.ctx, bindings.AppendMessageInput{
		TenantID: tenant, ConversationID: conv, ID: id, Role: bindings.RoleUser,
		Content: content, TurnNumber: turn, CreatedAt: t0,
	})
	must(t, "AppendMessage "+id, err)
	return m
}

func msgIDs(ms []bindings.ConversationMessage) []string {
	return project(ms, func(m bindings.ConversationMessage) string { return m.ID })
}

func (f *fixture) read(t *testing.T, tenant, conv string, limit int, before int64) []bindings.ConversationMessage {
	t.Helper()
	return mustReturn(f.Conversations.ReadMessages(f.ctx, bindings.ReadMessagesInput{TenantID: tenant, ConversationID: conv, Limit: limit, BeforeSeq: before}))(t, "ReadMessages")
}

func testAppendSeq(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	var last int64
	for i := range 5 {
		m := f.appendMsg(t, a, "conv-1", fmt.Sprintf("m%d", i), "text", i+1)
		if m.Seq <= last {
			t.Fatalf("message %d has Seq %d after %d: want strictly increasing", i, m.Seq, last)
		}
		last = m.Seq
	}
}

func testAppendIdempotent(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	first := f.appendMsg(t, a, "conv-1", "m1", "first", 1)
	again, err := f.Conversations.AppendMessage(f.ctx, bindings.AppendMessageInput{
		TenantID: a, ConversationID: "conv-1", ID: "m1", Role: bindings.RoleAgent, Content: "second", TurnNumber: 4,
	})
	must(t, "append again", err)
	diff(t, "second append of m1", again, first)
	ms := f.read(t, a, "conv-1", -1, 0)
	diff(t, "stored messages", ms, []bindings.ConversationMessage{first})
	c := f.get(t, a, "conv-1")
	if c.MessageCount != 1 || c.TurnCount != 1 {
		t.Fatalf("counts after a repeated append: MessageCount %d TurnCount %d, want 1 and 1", c.MessageCount, c.TurnCount)
	}
}

func testAppendGeneratesID(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	m1 := f.appendMsg(t, a, "conv-1", "", "one", 1)
	m2 := f.appendMsg(t, a, "conv-1", "", "two", 2)
	if m1.ID == "" || m2.ID == "" || m1.ID == m2.ID {
		t.Fatalf("generated message ids %q and %q: want two distinct non-empty ids", m1.ID, m2.ID)
	}
	diff(t, "stored", msgIDs(f.read(t, a, "conv-1", -1, 0)), []string{m1.ID, m2.ID})
}

func testAppendNow(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	f.Clock.Advance(time.Hour)
	m, err := f.Conversations.AppendMessage(f.ctx, bindings.AppendMessageInput{TenantID: a, ConversationID: "conv-1", Role: bindings.RoleUser, Content: "x", TurnNumber: 1})
	must(t, "AppendMessage", err)
	if !m.CreatedAt.Equal(f.Clock.Now()) {
		t.Fatalf("CreatedAt = %v, want the clock's now %v", m.CreatedAt, f.Clock.Now())
	}
}

func testAppendValidates(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	for name, in := range map[string]bindings.AppendMessageInput{
		"unknown role":                 {TenantID: a, ConversationID: "conv-1", Role: "robot", Content: "x"},
		"empty role":                   {TenantID: a, ConversationID: "conv-1", Content: "x"},
		"no content and no tool calls": {TenantID: a, ConversationID: "conv-1", Role: bindings.RoleAgent},
		"empty tenant":                 {ConversationID: "conv-1", Role: bindings.RoleUser, Content: "x"},
		"empty conversation":           {TenantID: a, Role: bindings.RoleUser, Content: "x"},
	} {
		_, err := f.Conversations.AppendMessage(f.ctx, in)
		wantCode(t, name, err, agents.CodeInvalidMessage)
	}
	if ms := f.read(t, a, "conv-1", -1, 0); len(ms) != 0 {
		t.Fatalf("invalid appends stored %d messages", len(ms))
	}
	// Tool calls alone are content enough.
	_, err := f.Conversations.AppendMessage(f.ctx, bindings.AppendMessageInput{
		TenantID: a, ConversationID: "conv-1", Role: bindings.RoleAgent,
		ToolCalls: []bindings.ToolCall{{ID: "call_1", Name: "acme.search", Arguments: json.RawMessage(`{"q":"x"}`)}},
	})
	must(t, "append with tool calls only", err)
}

func testAppendUnknown(t *testing.T, f *fixture) {
	_, err := f.Conversations.AppendMessage(f.ctx, bindings.AppendMessageInput{TenantID: f.tenant("a"), ConversationID: "missing", Role: bindings.RoleUser, Content: "x"})
	wantCode(t, "AppendMessage", err, agents.CodeConversationNotFound)
}

func testMessageRoundTrip(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	in := bindings.AppendMessageInput{
		TenantID: a, ConversationID: "conv-1", ID: "m1", Role: bindings.RoleAgent, Content: "calling",
		ToolCalls: []bindings.ToolCall{
			{ID: "call_1", Name: "acme.search", Arguments: json.RawMessage(`{"q":"nda","k":3}`)},
			{ID: "call_2", Name: "acme.send-email", Arguments: json.RawMessage(`{"to":["a@b.c"]}`)},
		},
		TurnNumber: 3, RunID: "run-1", ParticipantID: "user-7", Metadata: json.RawMessage(`{"tool":{"id":"acme.search","version":"1.0.0"}}`), CreatedAt: at(7),
	}
	tool := bindings.AppendMessageInput{TenantID: a, ConversationID: "conv-1", ID: "m2", Role: bindings.RoleTool, Content: `{"hits":[]}`, ToolCallID: "call_1", TurnNumber: 3, RunID: "run-1", CreatedAt: at(8)}
	m1, err := f.Conversations.AppendMessage(f.ctx, in)
	must(t, "append m1", err)
	m2, err := f.Conversations.AppendMessage(f.ctx, tool)
	must(t, "append m2", err)
	want := []bindings.ConversationMessage{
		{TenantID: a, ConversationID: "conv-1", ID: "m1", Seq: m1.Seq, Role: in.Role, Content: in.Content, ToolCalls: in.ToolCalls, TurnNumber: 3, RunID: "run-1", ParticipantID: "user-7", Metadata: in.Metadata, CreatedAt: at(7)},
		{TenantID: a, ConversationID: "conv-1", ID: "m2", Seq: m2.Seq, Role: bindings.RoleTool, Content: tool.Content, ToolCallID: "call_1", TurnNumber: 3, RunID: "run-1", CreatedAt: at(8)},
	}
	diff(t, "returned by append", []bindings.ConversationMessage{m1, m2}, want)
	diff(t, "read back", f.read(t, a, "conv-1", 10, 0), want)
}

func testCounts(t *testing.T, f *fixture) {
	a := f.tenant("a")
	c := f.open(t, a, "conv-1", at(0))
	if c.TurnCount != 0 || c.MessageCount != 0 {
		t.Fatalf("new conversation: TurnCount %d MessageCount %d, want 0 and 0", c.TurnCount, c.MessageCount)
	}
	f.appendMsg(t, a, "conv-1", "m1", "q1", 1)
	_, err := f.appendRole(a, "conv-1", "m2", bindings.RoleAgent, "a1", 1)
	must(t, "AppendMessage m2", err)
	f.appendMsg(t, a, "conv-1", "m3", "q2", 2)
	_, err = f.appendRole(a, "conv-1", "m4", bindings.RoleAgent, "a late note of turn 1", 1)
	must(t, "AppendMessage m4", err)
	c = f.get(t, a, "conv-1")
	if c.TurnCount != 2 || c.MessageCount != 4 {
		t.Fatalf("after four messages over two turns: TurnCount %d MessageCount %d, want the highest turn 2 and 4", c.TurnCount, c.MessageCount)
	}
	cs, err := f.Conversations.ListConversations(f.ctx, bindings.ListConversationsInput{TenantID: a})
	must(t, "ListConversations", err)
	if len(cs) != 1 || cs[0].TurnCount != 2 || cs[0].MessageCount != 4 {
		t.Fatalf("listed counts: %+v, want TurnCount 2 MessageCount 4", cs)
	}
}

func testReadLatest(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	for i := 1; i <= 7; i++ {
		f.appendMsg(t, a, "conv-1", fmt.Sprintf("m%d", i), fmt.Sprintf("text %d", i), i)
	}
	ms := f.read(t, a, "conv-1", 3, 0)
	diff(t, "latest 3", msgIDs(ms), []string{"m5", "m6", "m7"})
	for i := 1; i < len(ms); i++ {
		if ms[i].Seq <= ms[i-1].Seq {
			t.Fatalf("Seq not ascending: %d then %d", ms[i-1].Seq, ms[i].Seq)
		}
	}
	diff(t, "more than stored", msgIDs(f.read(t, a, "conv-1", 50, 0)), []string{"m1", "m2", "m3", "m4", "m5", "m6", "m7"})
}

func testReadLimits(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	for i := 1; i <= 3; i++ {
		f.appendMsg(t, a, "conv-1", fmt.Sprintf("m%d", i), "x", i)
	}
	if ms := f.read(t, a, "conv-1", 0, 0); len(ms) != 0 {
		t.Fatalf("Limit 0 read %d messages, want none", len(ms))
	}
	diff(t, "Limit -1", msgIDs(f.read(t, a, "conv-1", -1, 0)), []string{"m1", "m2", "m3"})
}

func testReadBeforeSeq(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	var seqs []int64
	for i := 1; i <= 6; i++ {
		seqs = append(seqs, f.appendMsg(t, a, "conv-1", fmt.Sprintf("m%d", i), "x", i).Seq)
	}
	diff(t, "3 before m5", msgIDs(f.read(t, a, "conv-1", 3, seqs[4])), []string{"m2", "m3", "m4"})
	diff(t, "all before m3", msgIDs(f.read(t, a, "conv-1", -1, seqs[2])), []string{"m1", "m2"})
	diff(t, "before m1", msgIDs(f.read(t, a, "conv-1", 5, seqs[0])), []string{})
}

func testReadUnknown(t *testing.T, f *fixture) {
	_, err := f.Conversations.ReadMessages(f.ctx, bindings.ReadMessagesInput{TenantID: f.tenant("a"), ConversationID: "missing", Limit: 5})
	wantCode(t, "ReadMessages", err, agents.CodeConversationNotFound)
}

func testAppendParticipant(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	m, err := f.Conversations.AppendMessage(f.ctx, bindings.AppendMessageInput{
		TenantID: a, ConversationID: "conv-1", ID: "m1", Role: bindings.RoleUser, Content: "hello", TurnNumber: 1, ParticipantID: "user-7", CreatedAt: at(1),
	})
	must(t, "AppendMessage", err)
	if m.ParticipantID != "user-7" {
		t.Fatalf("returned ParticipantID %q, want user-7", m.ParticipantID)
	}
	// A replay keeps the stored participant.
	again, err := f.Conversations.AppendMessage(f.ctx, bindings.AppendMessageInput{
		TenantID: a, ConversationID: "conv-1", ID: "m1", Role: bindings.RoleUser, Content: "hello", TurnNumber: 1, ParticipantID: "someone-else",
	})
	must(t, "replayed AppendMessage", err)
	if again.ParticipantID != "user-7" {
		t.Fatalf("replay returned ParticipantID %q, want the stored user-7", again.ParticipantID)
	}
	if got := f.read(t, a, "conv-1", 10, 0); len(got) != 1 || got[0].ParticipantID != "user-7" {
		t.Fatalf("read back %+v, want one message from user-7", got)
	}
	_, err = f.Conversations.AppendMessage(f.ctx, bindings.AppendMessageInput{
		TenantID: a, ConversationID: "conv-1", ID: "m2", Role: bindings.RoleAgent, Content: "x", ParticipantID: "bad\x00id",
	})
	wantCode(t, "participant id with a control character", err, agents.CodeInvalidMessage)
}
