package main

import "testing"

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
