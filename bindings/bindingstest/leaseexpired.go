package bindingstest

import (
	"errors"
	"strings"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// testAppendOwnLeaseExpired pins what a write refused for want of the
// lease says: when the writer's own lease expired and nobody else holds
// the run, *agents.RunBusyError with LeaseExpired (its message says the
// lease expired); once another owner holds it, LeaseExpired is false, the
// error names that owner and its message says another process drives the
// run. Both are run-busy, and neither stores anything.
func testAppendOwnLeaseExpired(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	f.step(t, a, "run-1", "worker-1", "setup", bindings.StepCompleted)
	f.Clock.Advance(leaseTTL + time.Second)
	appendLate := func() error {
		_, _, err := f.Runs.AppendStep(f.ctx, bindings.AppendStepInput{TenantID: a, RunID: "run-1", Owner: "worker-1", Entry: bindings.JournalEntry{Key: "render-prompt", Node: "render-prompt", Status: bindings.StepCompleted}})
		return err
	}

	err := appendLate()
	wantCode(t, "append after the own lease expired", err, agents.CodeRunBusy)
	var busy *agents.RunBusyError
	if !errors.As(err, &busy) || !busy.LeaseExpired || busy.Owner != "" {
		t.Fatalf("append after the own lease expired: %#v, want *agents.RunBusyError with LeaseExpired and no Owner", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "lease expired") || strings.Contains(msg, "another process") {
		t.Fatalf("append after the own lease expired: message %q, want it to say the lease expired (not another process)", msg)
	}

	_, err = f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	must(t, "AcquireLease by worker-2", err)
	err = appendLate()
	wantCode(t, "append after another owner took the lease", err, agents.CodeRunBusy)
	if !errors.As(err, &busy) || busy.LeaseExpired || busy.Owner != "worker-2" {
		t.Fatalf("append after another owner took the lease: %#v, want *agents.RunBusyError naming worker-2", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "another process") {
		t.Fatalf("append after another owner took the lease: message %q, want it to say another process drives the run", msg)
	}
	diff(t, "journal", keys(f.journal(t, a, "run-1")), []string{"setup/completed"})
}
