package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/pgstore"
)

// seedRun stores a run as of the store's clock: a snapshot, entries
// journal entries and one approval, with the given status and its lease
// released.
func seedRun(t *testing.T, s *pgstore.Store, tenant, run string, status bindings.RunStatus, entries int) {
	t.Helper()
	ctx := context.Background()
	if err := s.Write(ctx, bindings.RunSnapshotWriteInput{TenantID: tenant, RunID: run, FlowID: "agent.turn", FlowVersion: "1.1.0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: run, Owner: "seed", LeaseTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for i := range entries {
		if _, _, err := s.AppendStep(ctx, bindings.AppendStepInput{TenantID: tenant, RunID: run, Owner: "seed",
			Entry: bindings.JournalEntry{Key: fmt.Sprintf("step-%d", i), Status: bindings.StepCompleted}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RequestApproval(ctx, bindings.ApprovalRequest{TenantID: tenant, ID: run + "/approval", RunID: run}); err != nil {
		t.Fatal(err)
	}
	if status != bindings.RunRunning {
		if err := s.SetRunStatus(ctx, tenant, run, status); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.ReleaseLease(ctx, tenant, run, "seed"); err != nil {
		t.Fatal(err)
	}
}

// TestPrune seeds runs 60 days old and new through pgstore, then runs the
// built binary: it deletes the old finished runs of the tenant only, with
// their journals, snapshots and approvals, prints the counts, and a second
// run finds nothing.
func TestPrune(t *testing.T) {
	url := os.Getenv("KINDGI_TEST_DATABASE_URL")
	if url == "" {
		t.Skip("KINDGI_TEST_DATABASE_URL is not set")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	tenant, other := "prune-cli-"+hex.EncodeToString(b[:]), "prune-cli-other-"+hex.EncodeToString(b[:])
	ctx := context.Background()
	old := time.Now().Add(-60 * 24 * time.Hour)
	past, err := pgstore.Open(ctx, url, &pgstore.Options{Now: func() time.Time { return old }})
	if err != nil {
		t.Fatal(err)
	}
	defer past.Close()
	seedRun(t, past, tenant, "old-completed", bindings.RunCompleted, 3)
	seedRun(t, past, tenant, "old-failed", bindings.RunFailed, 2)
	seedRun(t, past, tenant, "old-running", bindings.RunRunning, 1)
	seedRun(t, past, other, "old-completed", bindings.RunCompleted, 1)
	present, err := pgstore.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer present.Close()
	seedRun(t, present, tenant, "new-completed", bindings.RunCompleted, 1)

	r := kindgi(t, "prune", "--database-url", url, "--tenant", tenant, "--older-than", "720h")
	if r.code != 0 {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	if want := "runs 2\njournal entries 5\nsnapshots 2\napprovals 2\n"; r.stdout != want {
		t.Errorf("stdout = %q, want %q", r.stdout, want)
	}
	for run, kept := range map[string]bool{"old-completed": false, "old-failed": false, "old-running": true, "new-completed": true} {
		_, err := present.GetRun(ctx, tenant, run)
		if (err == nil) != kept {
			t.Errorf("run %s after prune: %v (want kept: %t)", run, err, kept)
		}
	}
	if _, err := present.GetRun(ctx, other, "old-completed"); err != nil {
		t.Errorf("the other tenant's run was pruned: %v", err)
	}

	again := kindgi(t, "prune", "--database-url", url, "--tenant", tenant, "--json")
	var st bindings.PruneStats
	if again.code != 0 || json.Unmarshal([]byte(again.stdout), &st) != nil || st != (bindings.PruneStats{}) {
		t.Errorf("second prune: exit %d stdout %q stderr %q", again.code, again.stdout, again.stderr)
	}
	if r := kindgi(t, "prune", "--database-url", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2", "--tenant", tenant); r.code != 1 || !strings.Contains(r.stderr, "persistence-error") {
		t.Errorf("unreachable database: %+v", r)
	}
}

func TestPruneBadCommandLines(t *testing.T) {
	for _, args := range [][]string{
		{"prune", "--tenant", "acme"},
		{"prune", "--database-url", "postgres://x@127.0.0.1:1/x"},
		{"prune", "--database-url", "postgres://x@127.0.0.1:1/x", "--tenant", "acme", "--older-than", "-1h"},
		{"prune", "--database-url", "postgres://x@127.0.0.1:1/x", "--tenant", "acme", "--older-than", "soon"},
		{"prune", "--database-url", "postgres://x@127.0.0.1:1/x", "--tenant", "acme", "extra"},
	} {
		r := kindgi(t, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "usage: kindgi prune") {
			t.Errorf("kindgi %v: exit %d stderr %q, want 2 and the usage", args, r.code, r.stderr)
		}
	}
}
