package pgstore

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/storeio"
)

// TestParentSettingIsTransactionLocal: the parent a child run's open sets
// (sqlSetParent) does not outlive its transaction, so a top-level run
// opened next on the same connection has none.
func TestParentSettingIsTransactionLocal(t *testing.T) {
	pool := oneConnPool(t)
	s := New(pool, nil)
	ctx := t.Context()
	tenant := "parent-local-" + randomID()[:8]
	open := func(run, parent, step string) bindings.Run {
		t.Helper()
		res, err := s.openRun(ctx, storeio.OpenRunInput{
			Snapshot: bindings.RunSnapshotWriteInput{TenantID: tenant, RunID: run, FlowID: "agent.turn", FlowVersion: "1.1.0",
				AgentID: "a", AgentVersion: "1.0.0", Input: json.RawMessage(`{}`)},
			Start: bindings.StartRunInput{TenantID: tenant, RunID: run, Owner: "o", LeaseTTL: time.Minute,
				ParentRunID: parent, ParentStepKey: step},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res.Run
	}
	if r := open("kid", "top", "call/1"); r.ParentRunID != "top" || r.ParentStepKey != "call/1" {
		t.Fatalf("child opened with parent %q step %q", r.ParentRunID, r.ParentStepKey)
	}
	if r := open("next", "", ""); r.ParentRunID != "" {
		t.Fatalf("a top-level run opened after a child has parent %q", r.ParentRunID)
	}
	got, err := s.GetRun(ctx, tenant, "next")
	if err != nil {
		t.Fatal(err)
	}
	if got.ParentRunID != "" || got.ParentStepKey != "" {
		t.Fatalf("stored top-level run has parent %q step %q", got.ParentRunID, got.ParentStepKey)
	}
	wantSettingUnset(t, pool, "kindgi.parent_run_id")
	wantSettingUnset(t, pool, "kindgi.parent_step_key")
}

// TestChildrenUseTheParentIndex checks with EXPLAIN ANALYZE that, among
// 20,000 top-level runs and 2,000 suspended parents with a child each,
// ListRuns of one run's children goes through agent_runs_parent_idx, and
// a claim reads agent_runs_claim_idx alone (the children's state is on
// the parent's row), with the custom and the generic plan alike.
func TestChildrenUseTheParentIndex(t *testing.T) {
	pool := testPool(t)
	ctx := t.Context()
	tenant := "parent-explain-" + randomID()[:8]
	if _, err := pool.Exec(ctx, `INSERT INTO agent_runs (tenant_id, id, flow_id, flow_version, status, created_at, updated_at, parent_run_id, parent_step_key)
		SELECT $1, 'top-' || g, 'agent.turn', '1.1.0', 'completed', now() - interval '1 day', now(), '', '' FROM generate_series(1, 20000) AS g
		UNION ALL
		SELECT $1, 'parent-' || g, 'agent.turn', '1.1.0', 'suspended', now(), now(), '', '' FROM generate_series(1, 2000) AS g
		UNION ALL
		SELECT $1, 'child-' || g, 'agent.turn', '1.1.0', CASE WHEN g % 2 = 0 THEN 'completed' ELSE 'suspended' END, now(), now(), 'parent-' || g, 'call/' || g
		FROM generate_series(1, 2000) AS g`, tenant); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE agent_runs`); err != nil {
		t.Fatal(err)
	}
	usesIndex := func(plan planNode) bool {
		var uses bool
		plan.walk(func(n planNode) {
			if n.IndexName == "agent_runs_parent_idx" {
				uses = true
			}
		})
		return uses
	}
	now := time.Now().UTC()
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		plan := explainAnalyze(t, pool, mode, sqlListChildren, tenant, []string(nil), 51, "parent-7")
		if !usesIndex(plan) {
			t.Errorf("%s: ListRuns by parent does not use agent_runs_parent_idx: %+v", mode, plan)
		}
		plan = explainAnalyze(t, pool, mode, sqlClaimRuns, "w", now.Add(time.Minute), now.Add(time.Second), 8, []string{tenant})
		scans := 0
		plan.walk(func(n planNode) {
			if n.IndexName != "" && n.IndexName != "agent_runs_claim_idx" && n.IndexName != "agent_runs_pkey" {
				t.Errorf("%s: the claim reads %s: %+v", mode, n.IndexName, plan)
			}
			if n.IndexName == "agent_runs_claim_idx" {
				scans++
			}
		})
		if scans != 1 {
			t.Errorf("%s: the claim scans agent_runs_claim_idx %d times, want once: %+v", mode, scans, plan)
		}
	}
}

// TestWorkerClaimsAParentOnceItsChildrenEnded claims across tenants as a
// kindgi_worker member, which sees no ended run: a suspended parent with
// no approvals of its own is claimed once its children ended (the
// children counts on its row say so), not while one is parked, and the
// counts follow every change of the children (created, status, pruned).
func TestWorkerClaimsAParentOnceItsChildrenEnded(t *testing.T) {
	ctx := t.Context()
	admin := New(testPool(t), nil)
	appPool, role := appRolePool(t)
	if _, err := testPool(t).Exec(ctx, "GRANT "+WorkerRole+" TO "+role); err != nil {
		t.Fatal(err)
	}
	worker := New(appPool, nil)
	tenant := "worker-parent-" + randomID()[:8]
	start := func(in bindings.StartRunInput) {
		t.Helper()
		in.TenantID, in.FlowID, in.FlowVersion = tenant, "agent.turn", "1.1.0"
		if _, err := admin.StartRun(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	status := func(run string, st bindings.RunStatus) {
		t.Helper()
		if err := admin.SetRunStatus(ctx, tenant, run, st); err != nil {
			t.Fatal(err)
		}
	}
	counts := func() (total, active int) {
		t.Helper()
		if err := testPool(t).QueryRow(ctx, `SELECT children_total, children_active FROM agent_runs WHERE tenant_id = $1 AND id = 'p'`, tenant).Scan(&total, &active); err != nil {
			t.Fatal(err)
		}
		return total, active
	}
	claimedParent := func() bool {
		t.Helper()
		// The claim across tenants (no tenant set: kindgi.claim), kept to
		// this tenant's runs: other tests' runs, older, would come first.
		runs, err := worker.claim(ctx, "", []string{tenant}, bindings.ClaimRunsInput{Owner: "w", LeaseTTL: time.Minute}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.TenantID == tenant && r.ID == "p" {
				return true
			}
		}
		return false
	}
	start(bindings.StartRunInput{RunID: "p", Status: bindings.RunQueued})
	status("p", bindings.RunSuspended)
	start(bindings.StartRunInput{RunID: "kid-1", Status: bindings.RunQueued, ParentRunID: "p", ParentStepKey: "call/1"})
	start(bindings.StartRunInput{RunID: "kid-2", Status: bindings.RunQueued, ParentRunID: "p", ParentStepKey: "call/2"})
	if total, active := counts(); total != 2 || active != 2 {
		t.Fatalf("children counts after two queued children = %d, %d; want 2, 2", total, active)
	}
	status("kid-1", bindings.RunSuspended)
	status("kid-2", bindings.RunCompleted)
	if total, active := counts(); total != 2 || active != 1 {
		t.Fatalf("children counts with one parked, one completed = %d, %d; want 2, 1", total, active)
	}
	if claimedParent() {
		t.Fatal("a worker claimed the parent while its child is parked")
	}
	status("kid-1", bindings.RunFailed)
	if !claimedParent() {
		t.Fatal("a worker did not claim the parent once its children ended")
	}
	if _, err := testPool(t).Exec(ctx, `DELETE FROM agent_runs WHERE tenant_id = $1 AND id = 'kid-2'`, tenant); err != nil {
		t.Fatal(err)
	}
	if total, active := counts(); total != 1 || active != 0 {
		t.Fatalf("children counts after a child was deleted = %d, %d; want 1, 0", total, active)
	}
}
