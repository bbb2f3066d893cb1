package turn_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn"
)

// countingRuns counts lease acquisitions.
type countingRuns struct {
	bindings.RunBinding
	acquired atomic.Int64
}

func (c *countingRuns) AcquireLease(ctx context.Context, in bindings.LeaseInput) (bindings.Run, error) {
	c.acquired.Add(1)
	return c.RunBinding.AcquireLease(ctx, in)
}

// TestLeaseIsRenewedDuringALongStep: a tool call longer than the lease
// keeps the lease alive.
func TestLeaseIsRenewedDuringALongStep(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), nil)
	f.addTool("acme.clause-search", "1.3.0", clauseSchema, func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
		time.Sleep(200 * time.Millisecond)
		return json.RawMessage(`{}`), nil
	})
	b := f.bindings()
	runs := &countingRuns{RunBinding: f.store}
	b.Runs, b.Journal = runs, nil
	b.LeaseTTL = 60 * time.Millisecond
	if _, err := turn.Invoke(t.Context(), f.input("Find a clause."), b); err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if n := runs.acquired.Load(); n < 2 {
		t.Errorf("lease renewed %d times during a 200 ms step with a 60 ms lease, want at least 2", n)
	}
}

// TestLostLeaseStopsTheDriver: when another driver takes an expired lease,
// the first one cannot write: its turn fails with run-busy and the run is
// left for the new owner.
func TestLostLeaseStopsTheDriver(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), nil)
	var runID string
	f.addTool("acme.clause-search", "1.3.0", clauseSchema, func(ctx context.Context, _ json.RawMessage, call bindings.CallContext) (json.RawMessage, error) {
		runID = call.RunID
		f.clock.Advance(time.Hour) // the lease expires
		if _, err := f.store.AcquireLease(ctx, bindings.LeaseInput{TenantID: tenant, RunID: call.RunID, Owner: "thief", TTL: time.Hour}); err != nil {
			t.Errorf("take over: %v", err)
		}
		return json.RawMessage(`{}`), nil
	})
	_, err := turn.Invoke(t.Context(), f.input("Find a clause."), f.bindings())
	if agents.CodeOf(err) != agents.CodeRunBusy {
		t.Fatalf("Invoke = %v, want run-busy", err)
	}
	for _, e := range f.journal(runID) {
		if e.Key == "agent-loop/1/dispatch-tools/call_1" && e.Status == bindings.StepCompleted {
			t.Errorf("the driver that lost its lease journaled %s", e.Key)
		}
	}
	run, _ := f.store.GetRun(t.Context(), tenant, runID)
	if run.Status != bindings.RunRunning || run.LeaseOwner != "thief" {
		t.Errorf("run = %+v, want running, leased to thief", run)
	}
}

// panickingTools panics on Invoke, as a broken binding might.
type panickingTools struct{ bindings.ToolRegistry }

func (p panickingTools) ForTenant(tenantID string) bindings.TenantTools {
	return panickingTenant{p.ToolRegistry.ForTenant(tenantID)}
}

type panickingTenant struct{ bindings.TenantTools }

func (panickingTenant) Invoke(context.Context, bindings.ToolDescriptor, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
	panic("tool binding bug")
}

// TestNoRenewalAfterAPanic: a drive that a binding's panic ends stops
// renewing its lease, so the run can be resumed once the lease expires.
func TestNoRenewalAfterAPanic(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), nil)
	b := f.bindings()
	runs := &countingRuns{RunBinding: f.store}
	b.Runs, b.Journal = runs, nil
	b.Tools = panickingTools{f.tools}
	b.LeaseTTL = 30 * time.Millisecond
	func() {
		defer func() { _ = recover() }()
		_, _ = turn.Invoke(t.Context(), f.input("Find."), b)
		t.Error("Invoke did not panic")
	}()
	before := runs.acquired.Load()
	time.Sleep(150 * time.Millisecond)
	if n := runs.acquired.Load() - before; n != 0 {
		t.Errorf("the lease was renewed %d times after the drive panicked", n)
	}
}
