package main

import (
	"strings"
	"testing"
)

// TestApproveCommandIsComplete: the hint a parked run prints is a command
// to copy as it is: the tenant, an approver, a reason and the approval id,
// quoted for the shell, and the database unless kindgi finds it in the
// environment.
func TestApproveCommandIsComplete(t *testing.T) {
	t.Setenv("USER", "o'hara")
	t.Setenv(databaseEnv, "postgres://db/a")
	if got, want := approveCommand("postgres://db/a", "acme-workers", "r1/agent-loop/1/dispatch-tools/call_1/approval"),
		`kindgi approvals approve --tenant acme-workers --approver 'o'\''hara' --reason "looks right" r1/agent-loop/1/dispatch-tools/call_1/approval`; got != want {
		t.Errorf("approveCommand =\n%s\nwant\n%s", got, want)
	}
	t.Setenv("USER", "")
	if got, want := approveCommand("postgres://u:p w@db/b?sslmode=disable", "acme workers", "ap"),
		`kindgi approvals approve --database-url 'postgres://u:p w@db/b?sslmode=disable' --tenant 'acme workers' --approver reviewer --reason "looks right" ap`; got != want {
		t.Errorf("approveCommand =\n%s\nwant\n%s", got, want)
	}
}

// TestUsageErrorStandsOnItsOwnLine: a bad command line prints its error
// once, first, then a blank line and the usage, and exits 2; -h prints the
// usage on stdout and exits 0.
func TestUsageErrorStandsOnItsOwnLine(t *testing.T) {
	for _, c := range []struct {
		args      []string
		want, use string
	}{
		{[]string{"submit", "-bogus"}, "worker: flag provided but not defined: -bogus", "usage: worker submit [flags]"},
		{[]string{"wait", "-tenant"}, "worker: flag needs an argument: -tenant", "usage: worker wait [flags]"},
		{[]string{"extra"}, `worker: unexpected arguments ["extra"]`, "usage: worker [flags] | worker submit [flags] | worker wait [flags]"},
	} {
		var stdout, stderr strings.Builder
		code := report(run(t.Context(), c.args, &stdout), &stdout, &stderr)
		lines := strings.Split(stderr.String(), "\n")
		if code != 2 || len(lines) < 3 || lines[0] != c.want || lines[1] != "" || lines[2] != c.use || strings.Count(stderr.String(), c.want) != 1 {
			t.Errorf("worker %v: exit %d, stderr\n%s\nwant exit 2, %q, a blank line, %q", c.args, code, stderr.String(), c.want, c.use)
		}
	}
	var stdout, stderr strings.Builder
	if code := report(run(t.Context(), []string{"wait", "-h"}, &stdout), &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "usage: worker wait") || stderr.Len() != 0 {
		t.Errorf("wait -h: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}
