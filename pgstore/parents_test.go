package pgstore

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
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
		res, err := s.OpenRun(ctx, bindings.OpenRunInput{
			Snapshot: bindings.RunSnapshotWriteInput{TenantID: tenant, RunID: run, FlowID: "agent.turn", FlowVersion: "1.1.0",
				AgentID: "a", AgentVersion: "1.0.0", Input: json.RawMessage(`{}`)},
			Start: bindings.StartRunInput{TenantID: tenant, RunID: run, Owner: "o", LeaseTTL: time.Minute,
				ParentRunID: parent, ParentStepKey: step},
		})
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
// ListRuns of one run's children and a claim's look at the parents'
// children go through agent_runs_parent_idx, with the custom and the
// generic plan alike.
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
		if !usesIndex(plan) {
			t.Errorf("%s: the claim does not look at children through agent_runs_parent_idx: %+v", mode, plan)
		}
	}
}
