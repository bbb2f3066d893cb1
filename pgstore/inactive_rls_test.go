package pgstore

import (
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
)

// TestInactiveSweepNeedsTheSweeperRole shows, as an application role that
// does not own the tables, that ListInactiveConversations lists no
// tenant's conversations until the role is a member of kindgi_sweeper, and
// then lists only open ones (a closed conversation stays hidden); closing
// goes through the tenant-scoped CloseIfInactive.
func TestInactiveSweepNeedsTheSweeperRole(t *testing.T) {
	app, role := appRolePool(t)
	ctx := t.Context()
	tenant := "idle-rls-" + suffix8()
	s := New(app, nil)
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, id := range []string{"open", "closed"} {
		if _, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, ID: id, AgentID: "acme.agent", AgentVersion: "1.0.0", OpenedAt: old}); err != nil {
			t.Fatalf("OpenConversation: %v", err)
		}
	}
	if err := s.CloseConversation(ctx, tenant, "closed"); err != nil {
		t.Fatal(err)
	}
	mine := func() []string {
		t.Helper()
		refs, err := s.ListInactiveConversations(ctx, bindings.InactiveConversationsInput{IdleBefore: old.Add(time.Second), Limit: 1000})
		if err != nil {
			t.Fatalf("ListInactiveConversations: %v", err)
		}
		var ids []string
		for _, r := range refs {
			if r.TenantID == tenant {
				ids = append(ids, r.ConversationID)
			}
		}
		return ids
	}
	if got := mine(); len(got) != 0 {
		t.Fatalf("without %s the sweep listed %v", sweeperRole, got)
	}
	grantSweeper(t, role)
	if got := mine(); len(got) != 1 || got[0] != "open" {
		t.Fatalf("with %s the sweep listed %v, want [open]", sweeperRole, got)
	}
	closed, err := s.CloseIfInactive(ctx, tenant, "open", old.Add(time.Second))
	if err != nil || !closed {
		t.Fatalf("CloseIfInactive as the application role: %v, %v", closed, err)
	}
	if got := mine(); len(got) != 0 {
		t.Fatalf("after the close the sweep listed %v", got)
	}
}
