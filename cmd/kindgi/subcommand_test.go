package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/kindgi/agents/bindings"
)

// TestSubcommandErrorsSayWhatWasWrong: a missing or unknown subcommand of
// runs, approvals and quotas says what was wrong on its own line, then a
// blank line, then the usage (exit 2); -h prints the usage on stdout.
func TestSubcommandErrorsSayWhatWasWrong(t *testing.T) {
	for _, c := range []struct {
		args []string
		line string
	}{
		{[]string{"runs"}, `kindgi runs: give a command: list, show`},
		{[]string{"runs", "bogus"}, `kindgi runs: unknown command "bogus" (want list, show)`},
		{[]string{"approvals", "bogus"}, `kindgi approvals: unknown command "bogus" (want list, approve, deny)`},
		{[]string{"quotas"}, `kindgi quotas: give a command: show`},
	} {
		r := kindgi(t, c.args...)
		lines := strings.Split(r.stderr, "\n")
		if r.code != exitUsage || len(lines) < 3 || lines[0] != c.line || lines[1] != "" || !strings.HasPrefix(lines[2], "usage: kindgi "+c.args[0]) {
			t.Errorf("kindgi %v: exit %d, stderr %q; want %q, a blank line, the usage", c.args, r.code, r.stderr, c.line)
		}
	}
	if r := kindgi(t, "runs", "-h"); r.code != exitOK || !strings.HasPrefix(r.stdout, "usage: kindgi runs") {
		t.Errorf("kindgi runs -h: exit %d, stdout %q", r.code, r.stdout)
	}
}

// TestRunsListNextPageIsACompleteCommand: a page of runs list that has
// more after it ends with the command that lists the next page — the
// store, the tenant, the status and the limit as given — and running that
// command as printed lists the next page.
func TestRunsListNextPageIsACompleteCommand(t *testing.T) {
	store, url, tenant := cliStore(t, "runs-next-")
	ctx := context.Background()
	for i := range 5 {
		if _, err := store.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: fmt.Sprintf("r-%d", i), FlowID: "agent.turn", FlowVersion: "1.1.0", Status: bindings.RunQueued}); err != nil {
			t.Fatal(err)
		}
	}
	r := kindgi(t, "runs", "list", "--database-url", url, "--tenant", tenant, "--status", "queued", "--limit", "2")
	m := regexp.MustCompile(`(?m)^more: (kindgi runs list .*)$`).FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		t.Fatalf("runs list: exit %d, stdout %q, stderr %q: no next-page command", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"--database-url", "--tenant " + tenant, "--status queued", "--limit 2", "--after "} {
		if !strings.Contains(m[1], want) {
			t.Errorf("next-page command %q lacks %q", m[1], want)
		}
	}
	// Run it as a reader pastes it, with the built binary for kindgi.
	cmd := exec.CommandContext(t.Context(), "sh", "-c", strings.Replace(m[1], "kindgi", binary, 1))
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", m[1], err, out)
	}
	first := regexp.MustCompile(`(?m)^(r-\d)\s`).FindAllStringSubmatch(r.stdout, -1)
	next := regexp.MustCompile(`(?m)^(r-\d)\s`).FindAllStringSubmatch(string(out), -1)
	if len(first) != 2 || len(next) != 2 || first[0][1] == next[0][1] || first[1][1] == next[0][1] {
		t.Errorf("pages %v then %v, want two runs each, none twice", first, next)
	}
}
