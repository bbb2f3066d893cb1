package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/kindgi/agents/internal/pgtest"
)

// TestParkThenApproveInAnotherProcess builds the example and runs it twice
// against a fresh database: the first process parks the turn on the
// approval and exits; the second approves and resumes it. The tool ran
// exactly once, and only in the second process.
func TestParkThenApproveInAnotherProcess(t *testing.T) {
	dbURL := pgtest.FreshDatabase(t, pgtest.AdminURL(t), "kindgi_example_")
	bin := filepath.Join(t.TempDir(), "postgres-example")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "KINDGI_DATABASE_URL="+dbURL)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", bin, args, err, out)
		}
		return string(out)
	}

	first := run()
	m := regexp.MustCompile(`(?m)^parked run (\S+)$`).FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("first process did not print a parked run:\n%s", first)
	}
	runID := m[1]
	if n := outboxCount(t, dbURL, runID); n != 0 {
		t.Fatalf("the gated tool ran %d time(s) before the approval", n)
	}

	second := run("approve", runID)
	if !strings.Contains(second, "run "+runID+" completed: I sent the NDA draft") {
		t.Fatalf("second process did not complete the run:\n%s", second)
	}
	if n := outboxCount(t, dbURL, runID); n != 1 {
		t.Fatalf("the approved tool ran %d times, want once", n)
	}

	// Approving again finds the run finished: nothing runs twice.
	third := run("approve", runID)
	if !strings.Contains(third, "ran 1 time(s)") {
		t.Fatalf("third process:\n%s", third)
	}
	if n := outboxCount(t, dbURL, runID); n != 1 {
		t.Fatalf("after a repeated approve the tool ran %d times, want once", n)
	}
}

func outboxCount(t *testing.T, dbURL, runID string) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM example_outbox WHERE run_id = $1`, runID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
