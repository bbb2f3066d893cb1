package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/kindgi/agents/bindings"
)

func TestConsoleRefusesBothOrNoAuthentication(t *testing.T) {
	t.Setenv("KINDGI_CONSOLE_TOKEN", "0123456789abcdef-token")
	r := kindgi(t, "console", "--database-url", "postgres://127.0.0.1:1/x", "--tenant", "acme", "--trusted-header", "X-User")
	if r.code != exitUsage || !strings.Contains(r.stderr, "choose one") {
		t.Errorf("token and header: exit %d, stderr %q; want usage, choose one", r.code, r.stderr)
	}
	t.Setenv("KINDGI_CONSOLE_TOKEN", "")
	r = kindgi(t, "console", "--database-url", "postgres://127.0.0.1:1/x", "--tenant", "acme")
	if r.code != exitUsage || !strings.Contains(r.stderr, "KINDGI_CONSOLE_TOKEN or pass --trusted-header") {
		t.Errorf("neither: exit %d, stderr %q; want usage", r.code, r.stderr)
	}
	// Without --tenant the command starts (here it fails to connect):
	// the reviewer sees every tenant the database role reads.
	t.Setenv("KINDGI_CONSOLE_TOKEN", "0123456789abcdef-token")
	r = kindgi(t, "console", "--database-url", "postgres://127.0.0.1:1/x")
	if r.code != exitFailure || strings.Contains(r.stderr, "--tenant") {
		t.Errorf("no tenant: exit %d, stderr %q; want a connection failure", r.code, r.stderr)
	}
}

// TestConsoleWithoutTenantsSeesEveryTenant: the tenants of a console
// started without --tenant are those the database role reads.
func TestConsoleWithoutTenantsSeesEveryTenant(t *testing.T) {
	store, _, tenant := cliStore(t, "console-cli-")
	ctx := context.Background()
	if _, err := store.RequestApproval(ctx, bindings.ApprovalRequest{TenantID: tenant, ID: "ap-1", ToolCallID: "c1", ToolID: "acme.send-email", ToolVersion: "1.0.0", Arguments: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	ids, err := (&visibleTenants{db: store.DB()}).list(ctx)
	if err != nil || !slices.Contains(ids, tenant) {
		t.Fatalf("visible tenants = %v, %v; want %s among them", ids, err, tenant)
	}
}
