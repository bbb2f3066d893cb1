package bindingstest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// RunInactiveConversationTests checks the optional
// bindings.InactiveConversationLister of Harness.Conversations: which
// conversations are idle (no message since the last one's time, strictly
// before the cutoff, open only), the listing's order and pages across
// tenants, and that CloseIfInactive closes an idle conversation exactly
// once, never one that a message made active again, also when a close and
// an append race. A harness whose Conversations lack it skips.
func RunInactiveConversationTests(t *testing.T, newHarness NewHarness) {
	t.Helper()
	runSuite(t, newHarness, "bindings.InactiveConversationLister", func(h Harness) bool {
		return implements[bindings.InactiveConversationLister](h.Conversations)
	}, inactiveCases)
}

var inactiveCases = []testCase{
	{name: "ListsOpenConversationsIdleSinceTheirLastMessage", run: testInactiveLists},
	{name: "ListPagesInOrderAcrossTenants", run: testInactivePages},
	{name: "CloseIfInactiveClosesOnlyAnIdleOpenConversation", run: testCloseIfInactive},
	{name: "ConcurrentClosesCloseOnce", run: testCloseIfInactiveConcurrent},
	{name: "CloseRacingAnAppendEitherClosesOrKeepsTheMessage", run: testCloseIfInactiveRacesAppend},
	{name: "ListRequiresALimit", run: testInactiveValidates},
}

func (f *fixture) idle() bindings.InactiveConversationLister {
	return f.Conversations.(bindings.InactiveConversationLister)
}

// listIdle pages through every idle conversation before cutoff and returns
// those of tenants as "tenant:id", checking the order of the whole listing.
func (f *fixture) listIdle(t *testing.T, cutoff time.Time, limit int, tenants ...string) []string {
	t.Helper()
	all := listAll(t, "ListInactiveConversations", limit, func(after bindings.InactiveConversationRef) ([]bindings.InactiveConversationRef, error) {
		return f.idle().ListInactiveConversations(f.ctx, bindings.InactiveConversationsInput{IdleBefore: cutoff, Limit: limit, After: after})
	}, bindings.InactiveConversationRefLess)
	var mine []string
	for _, r := range all {
		if !r.LastActivityAt.Before(cutoff) {
			t.Fatalf("listed %+v, not idle before %v", r, cutoff)
		}
		if slices.Contains(tenants, r.TenantID) {
			mine = append(mine, r.TenantID+":"+r.ConversationID)
		}
	}
	return mine
}

func (f *fixture) say(t *testing.T, tenant, conv string, when time.Time) {
	t.Helper()
	_, err := f.Conversations.AppendMessage(f.ctx, bindings.AppendMessageInput{
		TenantID: tenant, ConversationID: conv, Role: bindings.RoleAgent, Content: "hello", CreatedAt: when,
	})
	must(t, "AppendMessage", err)
}

func testInactiveLists(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "quiet", at(0))      // no message: idle since it opened
	f.open(t, a, "talked", at(0))     // a message at 100 s
	f.say(t, a, "talked", at(100))    //
	f.open(t, a, "closed", at(0))     // idle, but closed
	f.open(t, a, "edge", at(0))       // last message exactly at the cutoff
	f.say(t, a, "edge", at(50))       //
	f.open(t, a, "backdated", at(0))  // the latest message counts, not the last appended
	f.say(t, a, "backdated", at(200)) //
	f.say(t, a, "backdated", at(10))  //
	must(t, "CloseConversation", f.Conversations.CloseConversation(f.ctx, a, "closed"))

	if got, want := f.listIdle(t, at(50), 100, a), []string{a + ":quiet"}; !slices.Equal(got, want) {
		t.Fatalf("idle before 50 s: %v, want %v", got, want)
	}
	if got, want := f.listIdle(t, at(101), 100, a), []string{a + ":quiet", a + ":edge", a + ":talked"}; !slices.Equal(got, want) {
		t.Fatalf("idle before 101 s: %v, want %v", got, want)
	}
	// Paged: a store shared with other suites may hold more idle
	// conversations than one page.
	in := bindings.InactiveConversationsInput{IdleBefore: at(1000), Limit: 1000}
	for {
		refs, err := f.idle().ListInactiveConversations(f.ctx, in)
		must(t, "ListInactiveConversations", err)
		for _, r := range refs {
			if r.TenantID == a && r.ConversationID == "backdated" {
				if !r.LastActivityAt.Equal(at(200)) || r.AgentID != "acme.drafter" || r.AgentVersion != "1.0.0" {
					t.Fatalf("ref %+v, want last activity at 200 s and the agent acme.drafter@1.0.0", r)
				}
				return
			}
		}
		if len(refs) < in.Limit {
			break
		}
		in.After = refs[len(refs)-1]
	}
	t.Fatalf("backdated is not listed idle before 1000 s")
}

func testInactivePages(t *testing.T, f *fixture) {
	a, b := f.tenant("a"), f.tenant("b")
	for _, tenant := range []string{b, a} {
		for _, id := range []string{"c3", "c1", "c2"} {
			f.open(t, tenant, id, at(0))
		}
		f.open(t, tenant, "late", at(5))
	}
	want := []string{a + ":c1", a + ":c2", a + ":c3", b + ":c1", b + ":c2", b + ":c3", a + ":late", b + ":late"}
	for _, limit := range []int{1, 2, 3, 1000} {
		if got := f.listIdle(t, at(6), limit, a, b); !slices.Equal(got, want) {
			t.Fatalf("limit %d: listed %v, want %v", limit, got, want)
		}
	}
}

func testCloseIfInactive(t *testing.T, f *fixture) {
	a, b := f.tenant("a"), f.tenant("b")
	f.open(t, a, "c1", at(0))
	f.say(t, a, "c1", at(100))
	closed, err := f.idle().CloseIfInactive(f.ctx, a, "c1", at(100))
	must(t, "CloseIfInactive at the last message's time", err)
	if closed || f.get(t, a, "c1").Status != bindings.ConversationOpen {
		t.Fatalf("a conversation active at the cutoff was closed (%v)", closed)
	}
	_, err = f.idle().CloseIfInactive(f.ctx, b, "c1", at(1000))
	wantCode(t, "CloseIfInactive of another tenant's conversation", err, agents.CodeConversationNotFound)
	_, err = f.idle().CloseIfInactive(f.ctx, a, "nope", at(1000))
	wantCode(t, "CloseIfInactive of an unknown conversation", err, agents.CodeConversationNotFound)
	if f.get(t, a, "c1").Status != bindings.ConversationOpen {
		t.Fatal("another tenant's close closed the conversation")
	}
	closed, err = f.idle().CloseIfInactive(f.ctx, a, "c1", at(101))
	must(t, "CloseIfInactive", err)
	c := f.get(t, a, "c1")
	if !closed || c.Status != bindings.ConversationClosed || c.ClosedAt == nil {
		t.Fatalf("idle conversation: closed %v, status %s, closedAt %v", closed, c.Status, c.ClosedAt)
	}
	if closed, err := f.idle().CloseIfInactive(f.ctx, a, "c1", at(1000)); err != nil || closed {
		t.Fatalf("second close: closed %v, err %v; want false, nil", closed, err)
	}
	_, err = f.Conversations.AppendMessage(f.ctx, bindings.AppendMessageInput{TenantID: a, ConversationID: "c1", Role: bindings.RoleUser, Content: "hi", CreatedAt: at(2000)})
	wantCode(t, "AppendMessage to an auto-closed conversation", err, agents.CodeConversationClosed)
	if got := f.listIdle(t, at(5000), 100, a); len(got) != 0 {
		t.Fatalf("a closed conversation is listed idle: %v", got)
	}
}

func testCloseIfInactiveConcurrent(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "c1", at(0))
	const n = 16
	closed := make([]bool, n)
	errs := make([]error, n)
	concurrently(n, func(i int) { closed[i], errs[i] = f.idle().CloseIfInactive(f.ctx, a, "c1", at(10)) })
	wantOneWon(t, "close", "concurrent closes reported closing the conversation", closed, errs)
}

func testCloseIfInactiveRacesAppend(t *testing.T, f *fixture) {
	a := f.tenant("a")
	const rounds = 12
	for i := range rounds {
		id := fmt.Sprintf("c%d", i)
		f.open(t, a, id, at(0))
		var wg sync.WaitGroup
		var closed bool
		var cerr, aerr error
		wg.Go(func() { closed, cerr = f.idle().CloseIfInactive(f.ctx, a, id, at(10)) })
		wg.Go(func() {
			_, aerr = f.Conversations.AppendMessage(f.ctx, bindings.AppendMessageInput{
				TenantID: a, ConversationID: id, Role: bindings.RoleUser, Content: "still here", TurnNumber: 1, CreatedAt: at(20),
			})
		})
		wg.Wait()
		must(t, "CloseIfInactive", cerr)
		c := f.get(t, a, id)
		switch {
		case closed:
			wantCode(t, "append that lost to the close", aerr, agents.CodeConversationClosed)
			if c.Status != bindings.ConversationClosed || c.MessageCount != 0 {
				t.Fatalf("round %d: closed, but status %s with %d messages", i, c.Status, c.MessageCount)
			}
		default:
			must(t, "append that won over the close", aerr)
			if c.Status != bindings.ConversationOpen || c.MessageCount != 1 {
				t.Fatalf("round %d: not closed, but status %s with %d messages", i, c.Status, c.MessageCount)
			}
		}
	}
}

func testInactiveValidates(t *testing.T, f *fixture) {
	_, err := f.idle().ListInactiveConversations(f.ctx, bindings.InactiveConversationsInput{IdleBefore: at(0)})
	wantCode(t, "Limit 0", err, agents.CodeInvalidMessage)
}
