package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// TestRunsShowLastError: runs list and runs show print a stuck run's last
// failed drive (code, count, message with its control characters
// escaped) and --json carries it as lastError; a run that ended shows
// none.
func TestRunsShowLastError(t *testing.T) {
	store, url, tenant := cliStore(t, "runs-err-")
	ctx := context.Background()
	for _, id := range []string{"r-stuck", "r-ended"} {
		if _, err := store.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: id, FlowID: "agent.turn", FlowVersion: "1.1.0"}); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := store.RecordRunError(ctx, bindings.RecordRunErrorInput{TenantID: tenant, RunID: id, Code: agents.CodeCapabilityRoutingFailed,
				Message: "worker w1 cannot drive this run: \x1b[31mno provider\x00"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := store.SetRunStatus(ctx, tenant, "r-ended", bindings.RunCompleted); err != nil {
		t.Fatal(err)
	}
	db := []string{"--database-url", url, "--tenant", tenant}

	r := kindgi(t, append([]string{"runs", "list"}, db...)...)
	if r.code != 0 || strings.Contains(r.stdout, "\x1b") ||
		!regexp.MustCompile(`(?m)^r-stuck\s+running\s.*capability-routing-failed ×2: worker w1 cannot drive this run: \\x1b\[31mno provider\\x00$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^r-ended\s+completed\s.*\s-$`).MatchString(r.stdout) {
		t.Fatalf("runs list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = kindgi(t, append(append([]string{"runs", "show"}, db...), "r-stuck")...)
	if r.code != 0 || !regexp.MustCompile(`(?m)^last error capability-routing-failed ×2: worker w1 cannot drive this run: .*\(2 failed drives, the last at \S+\)$`).MatchString(r.stdout) {
		t.Fatalf("runs show: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = kindgi(t, append(append([]string{"runs", "show", "--json"}, db...), "r-stuck")...)
	var v struct {
		Run bindings.Run `json:"run"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &v) != nil || v.Run.LastError == nil || v.Run.LastError.Attempts != 2 ||
		v.Run.LastError.Message != "worker w1 cannot drive this run: \x1b[31mno provider\x00" {
		t.Fatalf("runs show --json: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = kindgi(t, append(append([]string{"runs", "show"}, db...), "r-ended")...)
	if r.code != 0 || strings.Contains(r.stdout, "last error") {
		t.Fatalf("runs show of an ended run: exit %d\n%s", r.code, r.stdout)
	}
}
