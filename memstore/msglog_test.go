package memstore_test

import (
	"fmt"
	"testing"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
)

// Messages kept in chunks read back in order across chunk boundaries, by
// range, by BeforeSeq and by id.
func TestMessagesAcrossChunks(t *testing.T) {
	s := memstore.New(nil)
	ctx := t.Context()
	c, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "t", AgentID: "a", AgentVersion: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2500
	for i := 1; i <= n; i++ {
		if _, err := s.AppendMessage(ctx, bindings.AppendMessageInput{TenantID: "t", ConversationID: c.ID, ID: fmt.Sprint("m", i), Role: bindings.RoleUser, Content: fmt.Sprint("message ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(msgs []bindings.ConversationMessage, first, count int) {
		t.Helper()
		if len(msgs) != count {
			t.Fatalf("%d messages, want %d", len(msgs), count)
		}
		for k, m := range msgs {
			if want := first + k; m.Seq != int64(want) || m.Content != fmt.Sprint("message ", want) {
				t.Fatalf("message %d = seq %d %q, want seq %d", k, m.Seq, m.Content, want)
			}
		}
	}
	all, err := s.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: "t", ConversationID: c.ID, Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	check(all, 1, n)
	for _, before := range []int64{1030, 1025, 2049, 2500} {
		page, err := s.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: "t", ConversationID: c.ID, Limit: 20, BeforeSeq: before})
		if err != nil {
			t.Fatal(err)
		}
		check(page, int(before)-20, 20)
	}
	m, err := s.AppendMessage(ctx, bindings.AppendMessageInput{TenantID: "t", ConversationID: c.ID, ID: "m2048", Role: bindings.RoleUser, Content: "again"})
	if err != nil || m.Seq != 2048 || m.Content != "message 2048" {
		t.Fatalf("re-append of m2048 = seq %d %q, %v; want the stored message", m.Seq, m.Content, err)
	}
}
