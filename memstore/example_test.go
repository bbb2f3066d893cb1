package memstore_test

import (
	"context"
	"fmt"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
)

// A conversation keeps every message; a turn reads only the latest few.
func ExampleStore_ReadMessages() {
	ctx := context.Background()
	s := memstore.New(nil)
	c, _ := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "acme", AgentID: "acme.drafter", AgentVersion: "1.0.0"})
	for i, text := range []string{"Draft an NDA.", "Here is a draft.", "Make it mutual.", "Done: it is mutual now."} {
		role := bindings.RoleUser
		if i%2 == 1 {
			role = bindings.RoleAgent
		}
		_, _ = s.AppendMessage(ctx, bindings.AppendMessageInput{TenantID: "acme", ConversationID: c.ID, Role: role, Content: text, TurnNumber: i/2 + 1})
	}
	latest, _ := s.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: "acme", ConversationID: c.ID, Limit: 2})
	for _, m := range latest {
		fmt.Println(m.Seq, m.Role, m.Content)
	}
	// Output:
	// 3 user Make it mutual.
	// 4 agent Done: it is mutual now.
}

// Facts are found by keyword (BM25), by embedding (cosine), or both.
func ExampleStore_QueryFacts() {
	ctx := context.Background()
	s := memstore.New(&memstore.Options{Embeddings: memstore.HashEmbeddings{}})
	for id, text := range map[string]string{
		"c1": "Late payment incurs a penalty of 2% per month.",
		"c2": "Either party may terminate with 30 days notice.",
		"c3": "Payment is due within 30 days of the invoice.",
	} {
		_, _ = s.PutFact(ctx, bindings.Fact{TenantID: "acme", ID: id, Type: "acme.clause", Text: text})
	}
	found, _ := s.QueryFacts(ctx, bindings.MemoryQuery{
		TenantID: "acme", Types: []string{"acme.clause"}, Scope: agent.ScopeTenant,
		Mode: agent.ModeKeyword, Query: "late payment", Limit: 5,
	})
	for _, f := range found {
		fmt.Println(f.Fact.ID)
	}
	// Output:
	// c1
	// c3
}
