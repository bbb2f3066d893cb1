package bindingstest

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// RunConversationTests checks a ConversationBinding against its contract:
// open, get, list, close and delete; keyset pagination by (OpenedAt DESC,
// ID DESC), stable while rows are inserted; reading the latest N messages in
// order; idempotent appends per message id; closed conversations; counts;
// one user message per turn number, also under concurrent appends; and
// tenant isolation everywhere.
func RunConversationTests(t *testing.T, newHarness NewHarness) {
	t.Helper()
	runSuite(t, newHarness, "ConversationBinding", func(h Harness) bool { return h.Conversations != nil }, slices.Concat(conversationCases, turnCases))
}

var conversationCases = []testCase{
	{name: "OpenStoresEveryField", run: testOpenStoresEveryField},
	{name: "OpenGeneratesUniqueIDs", run: testOpenGeneratesUniqueIDs},
	{name: "OpenWithZeroOpenedAtUsesNow", clock: true, run: testOpenWithZeroOpenedAtUsesNow},
	{name: "OpenRequiresTenantAndAgent", run: testOpenRequiresTenantAndAgent},
	{name: "ReopenReturnsStoredConversationUnchanged", run: testReopenReturnsStored},
	{name: "ReopenWithAnotherAgentVersionIsMismatch", run: testReopenMismatch},
	{name: "GetUnknownIsNotFound", run: testGetUnknown},
	{name: "ListFiltersByProjectAgentAndStatus", run: testListFilters},
	{name: "ListOrdersByOpenedAtDescThenIDDesc", run: testListOrder},
	{name: "ListDefaultLimitIs100", run: testListDefaultLimit},
	{name: "PagesFollowKeysetOrderWithTies", run: testPagesKeyset},
	{name: "PageIsStableWhileRowsAreInserted", run: testPageStableUnderInserts},
	{name: "PageCursorSurvivesDeletionOfItsRow", run: testPageCursorDeleted},
	{name: "PageAppliesFilters", run: testPageFilters},
	{name: "CloseIsIdempotentAndSetsClosedAt", run: testCloseIdempotent},
	{name: "CloseUnknownIsNotFound", run: testCloseUnknown},
	{name: "AppendToClosedConversationIsClosed", run: testAppendClosed},
	{name: "DeleteRemovesConversationAndMessages", run: testDelete},
	{name: "DeleteIsIdempotent", run: testDeleteIdempotent},
	{name: "AppendAssignsIncreasingSeq", run: testAppendSeq},
	{name: "AppendMessageIsIdempotentPerID", run: testAppendIdempotent},
	{name: "AppendGeneratesIDWhenEmpty", run: testAppendGeneratesID},
	{name: "AppendWithZeroCreatedAtUsesNow", clock: true, run: testAppendNow},
	{name: "AppendValidatesRoleAndContent", run: testAppendValidates},
	{name: "AppendToUnknownConversationIsNotFound", run: testAppendUnknown},
	{name: "MessageRoundTripsEveryField", run: testMessageRoundTrip},
	{name: "AppendKeepsTheParticipant", run: testAppendParticipant},
	{name: "TurnCountAndMessageCountFollowAppends", run: testCounts},
	{name: "ReadMessagesReturnsLatestNInAppendOrder", run: testReadLatest},
	{name: "ReadMessagesLimitZeroReadsNoneNegativeReadsAll", run: testReadLimits},
	{name: "ReadMessagesBeforeSeqPagesBackwards", run: testReadBeforeSeq},
	{name: "ReadMessagesOfUnknownConversationIsNotFound", run: testReadUnknown},
	{name: "TenantIsolationOnEveryMethod", run: testConversationTenantIsolation},
	{name: "SameIDInAnotherTenantIsSeparate", run: testConversationSameIDOtherTenant},
	{name: "ReturnedValuesAreCopies", run: testConversationCopies},
	{name: "CancelledContextFails", run: testConversationCancelled},
}

// t0 is the base time of hand-made timestamps.
var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func at(seconds int) time.Time { return t0.Add(time.Duration(seconds) * time.Second) }

func (f *fixture) open(t *testing.T, tenant, id string, openedAt time.Time) bindings.Conversation {
	t.Helper()
	return f.openIn(t, bindings.OpenConversationInput{
		TenantID: tenant, ProjectID: "proj-1", ID: id,
		AgentID: "acme.drafter", AgentVersion: "1.0.0", OpenedAt: openedAt,
	})
}

func (f *fixture) openIn(t *testing.T, in bindings.OpenConversationInput) bindings.Conversation {
	t.Helper()
	return mustReturn(f.Conversations.OpenConversation(f.ctx, in))(t, "OpenConversation")
}

func (f *fixture) get(t *testing.T, tenant, id string) bindings.Conversation {
	t.Helper()
	return mustReturn(f.Conversations.GetConversation(f.ctx, tenant, id))(t, "GetConversation")
}

func convIDs(cs []bindings.Conversation) []string {
	return project(cs, func(c bindings.Conversation) string { return c.ID })
}

func (f *fixture) list(t *testing.T, in bindings.ListConversationsInput) []string {
	t.Helper()
	cs, err := f.Conversations.ListConversations(f.ctx, in)
	must(t, "ListConversations", err)
	return convIDs(cs)
}

func testOpenStoresEveryField(t *testing.T, f *fixture) {
	a := f.tenant("a")
	in := bindings.OpenConversationInput{
		TenantID: a, ProjectID: "proj-9", ID: "conv-1", AgentID: "acme.drafter", AgentVersion: "1.2.3",
		Title: "NDA for globex", ParticipantID: "user-7", OpenedAt: at(0),
	}
	got := f.openIn(t, in)
	want := bindings.Conversation{
		TenantID: a, ID: "conv-1", ProjectID: "proj-9", AgentID: "acme.drafter", AgentVersion: "1.2.3",
		Title: "NDA for globex", ParticipantID: "user-7", Status: bindings.ConversationOpen,
		OpenedAt: at(0), LastActivityAt: got.LastActivityAt,
	}
	diff(t, "opened conversation", got, want)
	diff(t, "read back", f.get(t, a, "conv-1"), want)
}

func testOpenGeneratesUniqueIDs(t *testing.T, f *fixture) {
	a := f.tenant("a")
	c1 := f.open(t, a, "", at(0))
	c2 := f.open(t, a, "", at(0))
	if c1.ID == "" || c2.ID == "" || c1.ID == c2.ID {
		t.Fatalf("generated ids %q and %q: want two distinct non-empty ids", c1.ID, c2.ID)
	}
	f.get(t, a, c1.ID)
	f.get(t, a, c2.ID)
}

func testOpenWithZeroOpenedAtUsesNow(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.Clock.Advance(time.Hour)
	c := f.open(t, a, "conv-1", time.Time{})
	if !c.OpenedAt.Equal(f.Clock.Now()) {
		t.Fatalf("OpenedAt = %v, want the clock's now %v", c.OpenedAt, f.Clock.Now())
	}
}

func testOpenRequiresTenantAndAgent(t *testing.T, f *fixture) {
	a := f.tenant("a")
	for name, in := range map[string]bindings.OpenConversationInput{
		"no tenant":  {ProjectID: "p", AgentID: "x", AgentVersion: "1.0.0"},
		"no agent":   {TenantID: a, ProjectID: "p", AgentVersion: "1.0.0"},
		"no version": {TenantID: a, ProjectID: "p", AgentID: "x"},
	} {
		_, err := f.Conversations.OpenConversation(f.ctx, in)
		wantCode(t, name, err, agents.CodeInvalidMessage)
	}
}

func testReopenReturnsStored(t *testing.T, f *fixture) {
	a := f.tenant("a")
	first := f.openIn(t, bindings.OpenConversationInput{TenantID: a, ID: "conv-1", AgentID: "acme.drafter", AgentVersion: "1.0.0", Title: "first", OpenedAt: at(0)})
	f.appendMsg(t, a, "conv-1", "m1", "hello", 1)
	stored := f.get(t, a, "conv-1")
	again := f.openIn(t, bindings.OpenConversationInput{TenantID: a, ID: "conv-1", AgentID: "acme.drafter", AgentVersion: "1.0.0", Title: "second", OpenedAt: at(50)})
	diff(t, "reopened conversation", again, stored)
	if again.Title != first.Title || !again.OpenedAt.Equal(first.OpenedAt) {
		t.Fatalf("reopen changed the conversation: %+v", again)
	}
}

func testReopenMismatch(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	_, err := f.Conversations.OpenConversation(f.ctx, bindings.OpenConversationInput{TenantID: a, ID: "conv-1", AgentID: "acme.drafter", AgentVersion: "2.0.0"})
	wantCode(t, "reopen with 2.0.0", err, agents.CodeAgentVersionMismatch)
	_, err = f.Conversations.OpenConversation(f.ctx, bindings.OpenConversationInput{TenantID: a, ID: "conv-1", AgentID: "acme.other", AgentVersion: "1.0.0"})
	wantCode(t, "reopen with another agent", err, agents.CodeAgentVersionMismatch)
	if got := f.get(t, a, "conv-1").AgentVersion; got != "1.0.0" {
		t.Fatalf("AgentVersion = %q after refused reopen, want 1.0.0", got)
	}
}

func testGetUnknown(t *testing.T, f *fixture) {
	_, err := f.Conversations.GetConversation(f.ctx, f.tenant("a"), "missing")
	wantCode(t, "GetConversation", err, agents.CodeConversationNotFound)
}

func testListFilters(t *testing.T, f *fixture) {
	a := f.tenant("a")
	for i, c := range []struct{ id, project, agent string }{
		{"c1", "p1", "x"}, {"c2", "p1", "y"}, {"c3", "p2", "x"}, {"c4", "p2", "y"},
	} {
		f.openIn(t, bindings.OpenConversationInput{TenantID: a, ID: c.id, ProjectID: c.project, AgentID: c.agent, AgentVersion: "1.0.0", OpenedAt: at(i)})
	}
	must(t, "CloseConversation", f.Conversations.CloseConversation(f.ctx, a, "c3"))
	for _, tc := range []struct {
		name string
		in   bindings.ListConversationsInput
		want []string
	}{
		{"all", bindings.ListConversationsInput{TenantID: a}, []string{"c4", "c3", "c2", "c1"}},
		{"project", bindings.ListConversationsInput{TenantID: a, ProjectID: "p1"}, []string{"c2", "c1"}},
		{"agent", bindings.ListConversationsInput{TenantID: a, AgentID: "x"}, []string{"c3", "c1"}},
		{"open", bindings.ListConversationsInput{TenantID: a, Status: bindings.ConversationOpen}, []string{"c4", "c2", "c1"}},
		{"closed", bindings.ListConversationsInput{TenantID: a, Status: bindings.ConversationClosed}, []string{"c3"}},
		{"project and agent", bindings.ListConversationsInput{TenantID: a, ProjectID: "p2", AgentID: "y"}, []string{"c4"}},
		{"limit", bindings.ListConversationsInput{TenantID: a, Limit: 2}, []string{"c4", "c3"}},
	} {
		diff(t, tc.name, f.list(t, tc.in), tc.want)
	}
}

// openTied opens five conversations, three of them at one instant and
// out of id order: c1 at(0); c3, c2 and c4 at(1); c5 at(2). Newest first,
// a tie by id descending, they list c5, c4, c3, c2, c1.
func (f *fixture) openTied(t *testing.T, tenant string) {
	t.Helper()
	f.open(t, tenant, "c1", at(0))
	f.open(t, tenant, "c3", at(1))
	f.open(t, tenant, "c2", at(1))
	f.open(t, tenant, "c4", at(1))
	f.open(t, tenant, "c5", at(2))
}

func testListOrder(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.openTied(t, a)
	diff(t, "order", f.list(t, bindings.ListConversationsInput{TenantID: a}), []string{"c5", "c4", "c3", "c2", "c1"})
}

func testListDefaultLimit(t *testing.T, f *fixture) {
	a := f.tenant("a")
	for i := range 101 {
		f.open(t, a, fmt.Sprintf("c%03d", i), at(i))
	}
	got := f.list(t, bindings.ListConversationsInput{TenantID: a})
	if len(got) != 100 || got[0] != "c100" || got[99] != "c001" {
		t.Fatalf("default list: %d conversations from %v to %v, want 100 from c100 to c001", len(got), got[0], got[len(got)-1])
	}
}

// firstPageOfFour opens c1 to c4 (opened at(1) to at(4)) and returns
// the listing input in pages of 2 with its first page.
func (f *fixture) firstPageOfFour(t *testing.T, tenant string) (bindings.ListConversationsPageInput, bindings.ConversationPage) {
	t.Helper()
	for i := 1; i <= 4; i++ {
		f.open(t, tenant, fmt.Sprintf("c%d", i), at(i))
	}
	in := bindings.ListConversationsPageInput{ListConversationsInput: bindings.ListConversationsInput{TenantID: tenant, Limit: 2}}
	p, err := f.Conversations.ListConversationsPage(f.ctx, in)
	must(t, "first page", err)
	return in, p
}

// pages reads every page of in and returns the ids page by page.
func (f *fixture) pages(t *testing.T, in bindings.ListConversationsPageInput) [][]string {
	t.Helper()
	var out [][]string
	for range 100 {
		p, err := f.Conversations.ListConversationsPage(f.ctx, in)
		must(t, "ListConversationsPage", err)
		out = append(out, convIDs(p.Conversations))
		if p.Next == nil {
			return out
		}
		in.Cursor = p.Next
	}
	t.Fatal("pagination did not end after 100 pages")
	return nil
}

func testPagesKeyset(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.openTied(t, a)
	in := bindings.ListConversationsPageInput{ListConversationsInput: bindings.ListConversationsInput{TenantID: a, Limit: 2}}
	diff(t, "pages of 2", f.pages(t, in), [][]string{{"c5", "c4"}, {"c3", "c2"}, {"c1"}})

	p, err := f.Conversations.ListConversationsPage(f.ctx, in)
	must(t, "first page", err)
	want := &bindings.ConversationPageCursor{OpenedAt: at(1), ID: "c4"}
	diff(t, "cursor after the first page", p.Next, want)

	in.Limit = 5
	diff(t, "one exactly full page", f.pages(t, in), [][]string{{"c5", "c4", "c3", "c2", "c1"}})
	in.Limit = 0
	diff(t, "default limit", f.pages(t, in), [][]string{{"c5", "c4", "c3", "c2", "c1"}})
}

func testPageStableUnderInserts(t *testing.T, f *fixture) {
	a := f.tenant("a")
	in, p := f.firstPageOfFour(t, a)
	diff(t, "first page", convIDs(p.Conversations), []string{"c4", "c3"})

	f.open(t, a, "c9", at(10)) // newer than the cursor: not on later pages
	f.open(t, a, "c3z", at(3)) // same OpenedAt as the cursor, larger id: before it
	f.open(t, a, "c2z", at(3)) // same OpenedAt as the cursor, smaller id: after it
	f.open(t, a, "c0", at(0))  // older: on a later page
	in.Cursor = p.Next
	in.Limit = 10
	p, err := f.Conversations.ListConversationsPage(f.ctx, in)
	must(t, "second page", err)
	diff(t, "second page", convIDs(p.Conversations), []string{"c2z", "c2", "c1", "c0"})
	if p.Next != nil {
		t.Fatalf("Next = %+v on the last page, want nil", p.Next)
	}
}

func testPageCursorDeleted(t *testing.T, f *fixture) {
	a := f.tenant("a")
	in, p := f.firstPageOfFour(t, a)
	must(t, "DeleteConversation", f.Conversations.DeleteConversation(f.ctx, a, "c3"))
	in.Cursor = p.Next
	p, err := f.Conversations.ListConversationsPage(f.ctx, in)
	must(t, "second page", err)
	diff(t, "second page", convIDs(p.Conversations), []string{"c2", "c1"})
}

func testPageFilters(t *testing.T, f *fixture) {
	a := f.tenant("a")
	for i := 1; i <= 6; i++ {
		project := "p1"
		if i%2 == 0 {
			project = "p2"
		}
		f.openIn(t, bindings.OpenConversationInput{TenantID: a, ID: fmt.Sprintf("c%d", i), ProjectID: project, AgentID: "x", AgentVersion: "1.0.0", OpenedAt: at(i)})
	}
	must(t, "CloseConversation", f.Conversations.CloseConversation(f.ctx, a, "c5"))
	in := bindings.ListConversationsPageInput{ListConversationsInput: bindings.ListConversationsInput{TenantID: a, ProjectID: "p1", Status: bindings.ConversationOpen, Limit: 1}}
	diff(t, "open conversations of p1", f.pages(t, in), [][]string{{"c3"}, {"c1"}})
}

func testCloseIdempotent(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	must(t, "first close", f.Conversations.CloseConversation(f.ctx, a, "conv-1"))
	closed := f.get(t, a, "conv-1")
	if closed.Status != bindings.ConversationClosed || closed.ClosedAt == nil {
		t.Fatalf("after close: status %q, ClosedAt %v; want closed with a time", closed.Status, closed.ClosedAt)
	}
	if f.Clock != nil && !closed.ClosedAt.Equal(f.Clock.Now()) {
		t.Fatalf("ClosedAt = %v, want the clock's now %v", closed.ClosedAt, f.Clock.Now())
	}
	if f.Clock != nil {
		f.Clock.Advance(time.Minute)
	}
	must(t, "second close", f.Conversations.CloseConversation(f.ctx, a, "conv-1"))
	diff(t, "closed twice", f.get(t, a, "conv-1"), closed)
	reopened := f.open(t, a, "conv-1", at(0))
	if reopened.Status != bindings.ConversationClosed {
		t.Fatalf("opening a closed conversation again gave status %q; a closed conversation cannot be reopened", reopened.Status)
	}
}

func testCloseUnknown(t *testing.T, f *fixture) {
	err := f.Conversations.CloseConversation(f.ctx, f.tenant("a"), "missing")
	wantCode(t, "CloseConversation", err, agents.CodeConversationNotFound)
}

func testAppendClosed(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	f.appendMsg(t, a, "conv-1", "m1", "hello", 1)
	must(t, "CloseConversation", f.Conversations.CloseConversation(f.ctx, a, "conv-1"))
	_, err := f.Conversations.AppendMessage(f.ctx, bindings.AppendMessageInput{TenantID: a, ConversationID: "conv-1", ID: "m2", Role: bindings.RoleUser, Content: "again", TurnNumber: 2})
	wantCode(t, "append to a closed conversation", err, agents.CodeConversationClosed)
	diff(t, "messages", msgIDs(f.read(t, a, "conv-1", -1, 0)), []string{"m1"})
	// Reading a closed conversation still works.
	if c := f.get(t, a, "conv-1"); c.MessageCount != 1 {
		t.Fatalf("MessageCount = %d, want 1", c.MessageCount)
	}
}

func testDelete(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	f.open(t, a, "conv-2", at(1))
	f.appendMsg(t, a, "conv-1", "m1", "hello", 1)
	must(t, "DeleteConversation", f.Conversations.DeleteConversation(f.ctx, a, "conv-1"))
	_, err := f.Conversations.GetConversation(f.ctx, a, "conv-1")
	wantCode(t, "get deleted", err, agents.CodeConversationNotFound)
	_, err = f.Conversations.ReadMessages(f.ctx, bindings.ReadMessagesInput{TenantID: a, ConversationID: "conv-1", Limit: -1})
	wantCode(t, "read deleted", err, agents.CodeConversationNotFound)
	diff(t, "list after delete", f.list(t, bindings.ListConversationsInput{TenantID: a}), []string{"conv-2"})
	// The id is free again, and the new conversation has no old messages.
	f.open(t, a, "conv-1", at(5))
	if ms := f.read(t, a, "conv-1", -1, 0); len(ms) != 0 {
		t.Fatalf("a conversation reopened after delete has %d old messages", len(ms))
	}
}

func testDeleteIdempotent(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	must(t, "first delete", f.Conversations.DeleteConversation(f.ctx, a, "conv-1"))
	must(t, "second delete", f.Conversations.DeleteConversation(f.ctx, a, "conv-1"))
	must(t, "delete of a never-stored id", f.Conversations.DeleteConversation(f.ctx, a, "missing"))
}

func testConversationTenantIsolation(t *testing.T, f *fixture) {
	a, b := f.tenant("a"), f.tenant("b")
	f.open(t, a, "conv-a", at(0))
	f.appendMsg(t, a, "conv-a", "m1", "secret", 1)
	ctx := f.ctx
	_, err := f.Conversations.GetConversation(ctx, b, "conv-a")
	wantCode(t, "get as b", err, agents.CodeConversationNotFound)
	_, err = f.Conversations.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: b, ConversationID: "conv-a", Limit: -1})
	wantCode(t, "read as b", err, agents.CodeConversationNotFound)
	_, err = f.Conversations.AppendMessage(ctx, bindings.AppendMessageInput{TenantID: b, ConversationID: "conv-a", Role: bindings.RoleUser, Content: "x"})
	wantCode(t, "append as b", err, agents.CodeConversationNotFound)
	wantCode(t, "close as b", f.Conversations.CloseConversation(ctx, b, "conv-a"), agents.CodeConversationNotFound)
	_, err = f.Conversations.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: b, ID: "conv-a", AgentID: "acme.drafter", AgentVersion: "9.9.9"})
	must(t, "open the same id as b", err) // b's own conversation, not a mismatch with a's
	must(t, "delete as b", f.Conversations.DeleteConversation(ctx, b, "conv-a"))
	if got := f.list(t, bindings.ListConversationsInput{TenantID: b}); len(got) != 0 {
		t.Fatalf("b lists %v", got)
	}
	p, err := f.Conversations.ListConversationsPage(ctx, bindings.ListConversationsPageInput{ListConversationsInput: bindings.ListConversationsInput{TenantID: b}})
	must(t, "page as b", err)
	if len(p.Conversations) != 0 {
		t.Fatalf("b pages %v", convIDs(p.Conversations))
	}
	c := f.get(t, a, "conv-a")
	if c.Status != bindings.ConversationOpen || c.MessageCount != 1 || c.AgentVersion != "1.0.0" {
		t.Fatalf("b's calls changed a's conversation: %+v", c)
	}
	diff(t, "a's messages", msgIDs(f.read(t, a, "conv-a", -1, 0)), []string{"m1"})
}

func testConversationSameIDOtherTenant(t *testing.T, f *fixture) {
	a, b := f.tenant("a"), f.tenant("b")
	f.openIn(t, bindings.OpenConversationInput{TenantID: a, ID: "conv-1", AgentID: "x", AgentVersion: "1.0.0", Title: "a's", OpenedAt: at(0)})
	f.openIn(t, bindings.OpenConversationInput{TenantID: b, ID: "conv-1", AgentID: "y", AgentVersion: "2.0.0", Title: "b's", OpenedAt: at(0)})
	f.appendMsg(t, a, "conv-1", "m1", "for a", 1)
	f.appendMsg(t, b, "conv-1", "m1", "for b", 1)
	if got := f.read(t, a, "conv-1", -1, 0); len(got) != 1 || got[0].Content != "for a" {
		t.Fatalf("a reads %+v", got)
	}
	if got := f.read(t, b, "conv-1", -1, 0); len(got) != 1 || got[0].Content != "for b" {
		t.Fatalf("b reads %+v", got)
	}
	must(t, "delete b's", f.Conversations.DeleteConversation(f.ctx, b, "conv-1"))
	if c := f.get(t, a, "conv-1"); c.Title != "a's" {
		t.Fatalf("a's conversation: %+v", c)
	}
}

func testConversationCopies(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(0))
	m, err := f.Conversations.AppendMessage(f.ctx, bindings.AppendMessageInput{
		TenantID: a, ConversationID: "conv-1", ID: "m1", Role: bindings.RoleAgent, Content: "x",
		ToolCalls: []bindings.ToolCall{{ID: "call_1", Name: "t", Arguments: json.RawMessage(`{"a":1}`)}},
		Metadata:  json.RawMessage(`{"k":"v"}`), TurnNumber: 1, CreatedAt: at(1),
	})
	must(t, "AppendMessage", err)
	want := []bindings.ConversationMessage{{TenantID: a, ConversationID: "conv-1", ID: "m1", Seq: m.Seq, Role: bindings.RoleAgent, Content: "x",
		ToolCalls: []bindings.ToolCall{{ID: "call_1", Name: "t", Arguments: json.RawMessage(`{"a":1}`)}},
		Metadata:  json.RawMessage(`{"k":"v"}`), TurnNumber: 1, CreatedAt: at(1)}}
	m.ToolCalls[0].Name = "changed"
	m.ToolCalls[0].Arguments[1] = 'X'
	m.Metadata[1] = 'X'
	read := f.read(t, a, "conv-1", -1, 0)
	read[0].ToolCalls[0].ID = "changed"
	read[0].Metadata[2] = 'Y'
	diff(t, "after mutating returned messages", f.read(t, a, "conv-1", -1, 0), want)

	must(t, "CloseConversation", f.Conversations.CloseConversation(f.ctx, a, "conv-1"))
	c := f.get(t, a, "conv-1")
	closedAt := *c.ClosedAt
	*c.ClosedAt = c.ClosedAt.Add(time.Hour)
	if got := f.get(t, a, "conv-1").ClosedAt; got == nil || !got.Equal(closedAt) {
		t.Fatalf("ClosedAt = %v after mutating a returned copy, want %v", got, closedAt)
	}
}

func testConversationCancelled(t *testing.T, f *fixture) {
	a := f.tenant("a")
	ctx := canceled(t)
	if _, err := f.Conversations.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: a, ID: "conv-1", AgentID: "x", AgentVersion: "1.0.0"}); err == nil {
		t.Fatal("OpenConversation with a cancelled context succeeded")
	}
	if _, err := f.Conversations.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: a, ConversationID: "conv-1", Limit: 1}); err == nil {
		t.Fatal("ReadMessages with a cancelled context succeeded")
	}
}
