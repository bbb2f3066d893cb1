package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/pgstore"
)

// cliStore opens the test database (migrated) for a test of a command
// that reads the store, closed at the test's end, and returns it with its
// URL and a fresh tenant id starting with prefix.
func cliStore(t *testing.T, prefix string) (*pgstore.Store, string, string) {
	t.Helper()
	url := os.Getenv("KINDGI_TEST_DATABASE_URL")
	if url == "" {
		t.Skip("KINDGI_TEST_DATABASE_URL is not set")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	store, err := pgstore.Open(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	return store, url, prefix + hex.EncodeToString(b[:])
}

// TestRunsAndApprovals seeds a queued, a completed and a parked run, then
// runs the built binary: runs list (newest first, by status, as JSON),
// runs show (status, lease, journal steps), approvals list, approve (the
// decision stored with the approver and reason) and deny of a decided one.
func TestRunsAndApprovals(t *testing.T) {
	store, url, tenant := cliStore(t, "runs-cli-")
	ctx := context.Background()
	if _, err := store.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: "r-queued", FlowID: "agent.turn", FlowVersion: "1.1.0", Status: bindings.RunQueued}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	seedRun(t, store, tenant, "r-done", bindings.RunCompleted, 3)
	time.Sleep(2 * time.Millisecond)
	seedRun(t, store, tenant, "r-parked", bindings.RunSuspended, 1)
	if _, err := store.ResolveApproval(ctx, tenant, "r-done/approval", bindings.ApprovalDecision{Approved: true, Reviewer: "seed"}); err != nil {
		t.Fatal(err)
	}
	db := []string{"--database-url", url, "--tenant", tenant}

	r := kindgi(t, append([]string{"runs", "list"}, db...)...)
	if r.code != 0 {
		t.Fatalf("runs list: exit %d stderr %q", r.code, r.stderr)
	}
	if ids := regexp.MustCompile(`(?m)^(r-\S+)\s+(\S+)`).FindAllStringSubmatch(r.stdout, -1); len(ids) != 3 ||
		ids[0][1] != "r-parked" || ids[0][2] != "suspended" || ids[1][1] != "r-done" || ids[2][1] != "r-queued" || ids[2][2] != "queued" {
		t.Fatalf("runs list, want r-parked, r-done, r-queued with their statuses:\n%s", r.stdout)
	}
	r = kindgi(t, append([]string{"runs", "list", "--status", "queued,completed", "--json", "--limit", "1"}, db...)...)
	var page bindings.RunPage
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &page) != nil || len(page.Runs) != 1 || page.Runs[0].ID != "r-done" || page.Next != "r-done" {
		t.Fatalf("runs list --status --json --limit 1: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = kindgi(t, append([]string{"runs", "list", "--status", "queued,completed", "--after", "r-done"}, db...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "r-queued") || strings.Contains(r.stdout, "r-done") {
		t.Fatalf("runs list --after: %q %q", r.stdout, r.stderr)
	}

	r = kindgi(t, append(append([]string{"runs", "show"}, db...), "r-done")...)
	if r.code != 0 || !strings.Contains(r.stdout, "status completed") || !strings.Contains(r.stdout, "lease -") ||
		!strings.Contains(r.stdout, "journal (3 entries)") || !regexp.MustCompile(`(?m)^3\s+step-2\s+completed\s+\S+\s+[\d.]+ms$`).MatchString(r.stdout) {
		t.Fatalf("runs show: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := kindgi(t, append(append([]string{"runs", "show"}, db...), "nope")...); r.code != 1 || !strings.Contains(r.stderr, "run-journal-unavailable") {
		t.Fatalf("runs show of an unknown run: %+v", r)
	}

	r = kindgi(t, append([]string{"approvals", "list"}, db...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "r-parked/approval") || strings.Contains(r.stdout, "r-done/approval") {
		t.Fatalf("approvals list: %q %q", r.stdout, r.stderr)
	}
	r = kindgi(t, append(append([]string{"approvals", "approve", "--approver", "rita", "--reason", "looks fine"}, db...), "r-parked/approval")...)
	if r.code != 0 || !strings.Contains(r.stdout, "approved by rita") {
		t.Fatalf("approvals approve: %+v", r)
	}
	a, err := store.GetApproval(ctx, tenant, "r-parked/approval")
	if err != nil || a.Status != bindings.ApprovalApproved || a.Reviewer != "rita" || a.Comment != "looks fine" {
		t.Fatalf("stored approval %+v, %v", a, err)
	}
	r = kindgi(t, append(append([]string{"approvals", "deny", "--approver", "sam"}, db...), "r-parked/approval")...)
	if r.code != 0 || !strings.Contains(r.stdout, "decided already: approved by rita") {
		t.Fatalf("deny of a decided approval: %+v", r)
	}
	if r := kindgi(t, append([]string{"approvals", "list", "--json"}, db...)...); r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Fatalf("approvals list after the decision: %+v", r)
	}
}

func TestRunsAndApprovalsBadCommandLines(t *testing.T) {
	for _, args := range [][]string{
		{"runs"},
		{"runs", "frobnicate"},
		{"runs", "list", "--database-url", "postgres://x"},
		{"runs", "show", "--database-url", "postgres://x", "--tenant", "t"},
		{"approvals", "approve", "--database-url", "postgres://x", "--tenant", "t", "id"},
		{"approvals", "deny", "--database-url", "postgres://x", "--tenant", "t", "--approver", "a"},
	} {
		if r := kindgi(t, args...); r.code != 2 {
			t.Errorf("kindgi %v: exit %d, want 2 (stderr %q)", args, r.code, r.stderr)
		}
	}
}
