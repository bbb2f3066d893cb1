package pgstore

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kindgi/agents/bindings"
)

// TestIDsOrderByteWiseUnderALanguageCollation migrates a database whose
// default collation is ICU's en-US, where "a" sorts before "B", and lists
// conversations that opened at the same moment: after OpenedAt they come
// by id in Go's byte order, descending, as memstore lists them and as on
// a database of the C locale, because ids are COLLATE "C".
func TestIDsOrderByteWiseUnderALanguageCollation(t *testing.T) {
	ctx := t.Context()
	testPool(t)
	admin, err := pgx.Connect(ctx, testEnv.adminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	name := testEnv.name + "_icu"
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'"); err != nil {
		t.Fatal(err)
	}
	cfg := testEnv.config.Copy()
	cfg.ConnConfig.Database = name
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Close()
		c, err := pgx.Connect(context.Background(), testEnv.adminURL)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Error(err)
		}
	})
	if err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	s := New(pool, nil)
	at := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	ids := []string{"a", "B", "b", "A", "_", "Z1", "z0", "é"}
	for _, id := range ids {
		if _, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "t", ID: id, AgentID: "a", AgentVersion: "1", OpenedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	want := slices.Clone(ids)
	slices.Sort(want)
	slices.Reverse(want)
	cs, err := s.ListConversations(ctx, bindings.ListConversationsInput{TenantID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cs {
		got = append(got, c.ID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("conversations listed %q, want %q (byte order, descending)", got, want)
	}
	// The keyset cursor compares ids in the same order.
	p, err := s.ListConversationsPage(ctx, bindings.ListConversationsPageInput{
		ListConversationsInput: bindings.ListConversationsInput{TenantID: "t"},
		Cursor:                 &bindings.ConversationPageCursor{OpenedAt: at, ID: want[2]},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Conversations) != len(want)-3 || p.Conversations[0].ID != want[3] {
		t.Fatalf("the page after %q starts with %+v, want %d conversations from %q", want[2], p.Conversations, len(want)-3, want[3])
	}
}
