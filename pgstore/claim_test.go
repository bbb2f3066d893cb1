package pgstore

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kindgi/agents/bindings"
)

// TestClaimAcrossTenantsNeedsTheWorkerRole claims as a role subject to
// row-level security: without membership of kindgi_worker a claim across
// tenants takes nothing (a claim naming its tenant still works); granted
// the role, it takes every tenant's claimable runs, and still reads no
// journal, snapshot or message of another tenant.
func TestClaimAcrossTenantsNeedsTheWorkerRole(t *testing.T) {
	ctx := t.Context()
	admin := New(testPool(t), nil)
	appPool, role := appRolePool(t)
	app := New(appPool, nil)
	suffix := randomID()[:8]
	a, b, c := "claim-a-"+suffix, "claim-b-"+suffix, "claim-c-"+suffix
	for _, tenant := range []string{a, b, c} {
		if _, err := admin.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: "q", FlowID: "agent.turn", FlowVersion: "1.1.0", Status: bindings.RunQueued}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := admin.AppendStep(ctx, bindings.AppendStepInput{TenantID: tenant, RunID: "q", Entry: bindings.JournalEntry{Key: "setup", Node: "setup", Status: bindings.StepCompleted}}); err != nil {
			t.Fatal(err)
		}
	}
	mine := func(runs []bindings.Run) map[string]bool {
		got := map[string]bool{}
		for _, r := range runs {
			if r.TenantID == a || r.TenantID == b || r.TenantID == c {
				got[r.TenantID] = true
			}
		}
		return got
	}
	claim := func(s *Store, tenants ...string) map[string]bool {
		t.Helper()
		runs, err := s.ClaimRuns(ctx, bindings.ClaimRunsInput{Owner: "w-" + suffix, LeaseTTL: time.Minute, Limit: 1000, TenantIDs: tenants})
		if err != nil {
			t.Fatalf("ClaimRuns as %s: %v", role, err)
		}
		return mine(runs)
	}
	if got := claim(app); len(got) != 0 {
		t.Fatalf("an ordinary role claimed across tenants: %v", got)
	}
	if got := claim(app, a); !got[a] || len(got) != 1 {
		t.Fatalf("an ordinary role claiming its tenant %s got %v", a, got)
	}
	// A parked run of c whose one approval is decided needs a driver too.
	if _, err := admin.StartRun(ctx, bindings.StartRunInput{TenantID: c, RunID: "p", FlowID: "agent.turn", FlowVersion: "1.1.0", Status: bindings.RunQueued}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RequestApproval(ctx, bindings.ApprovalRequest{TenantID: c, ID: "p/ap", RunID: "p", ToolCallID: "c1", ToolID: "acme.send-email", ToolVersion: "1.0.0",
		Arguments: json.RawMessage(`{"secret":"s3cr3t"}`), ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := admin.SetRunStatus(ctx, c, "p", bindings.RunSuspended); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.ResolveApproval(ctx, c, "p/ap", bindings.ApprovalDecision{Approved: true, Reviewer: "r"}); err != nil {
		t.Fatal(err)
	}
	if _, err := testPool(t).Exec(ctx, "GRANT "+WorkerRole+" TO "+role); err != nil {
		t.Fatal(err)
	}
	claimed, err := app.ClaimRuns(ctx, bindings.ClaimRunsInput{Owner: "w-" + suffix, LeaseTTL: time.Minute, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	got, parked := mine(claimed), false
	for _, r := range claimed {
		parked = parked || (r.TenantID == c && r.ID == "p")
	}
	if !got[b] || !got[c] || got[a] || !parked {
		t.Fatalf("a kindgi_worker member claimed %v across tenants (parked run %v), want %s and %s with c's decided parked run (%s is leased)", got, parked, b, c, a)
	}
	// References and leases only: the claim's setting opens no journal,
	// and without it the runs of other tenants are hidden again.
	var journal, approvals, runs int
	err = pgx.BeginFunc(ctx, appPool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, setClaimSQL); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM agent_approvals WHERE tenant_id = ANY($1)`, []string{a, b, c}).Scan(&approvals); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT count(*) FROM agent_run_journal WHERE tenant_id = ANY($1)`, []string{a, b, c}).Scan(&journal)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := appPool.QueryRow(ctx, `SELECT count(*) FROM agent_runs WHERE tenant_id = ANY($1)`, []string{a, b, c}).Scan(&runs); err != nil {
		t.Fatal(err)
	}
	if journal != 0 || approvals != 0 || runs != 0 {
		t.Fatalf("a kindgi_worker member read %d journal entries and %d approvals under kindgi.claim and %d runs without it, want none", journal, approvals, runs)
	}
}

// TestWatchRunsHearsSubmissionsAndDecisions watches through LISTEN: a
// queued run, a released lease and a decided approval each arrive as a
// claimable change, and the watch ends (channel closed) with its context.
func TestWatchRunsHearsSubmissionsAndDecisions(t *testing.T) {
	s := New(testPool(t), nil)
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := s.WatchRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tenant := "watch-" + randomID()[:8]
	// The listener may still be connecting: wait for its first change.
	expect := func(what, run string, status bindings.RunStatus) {
		t.Helper()
		deadline := time.After(5 * time.Second)
		for {
			select {
			case c := <-ch:
				if c.TenantID == tenant && c.RunID == run && c.Status == status && c.Claimable {
					return
				}
			case <-deadline:
				t.Fatalf("no claimable change for %s (run %s, status %q)", what, run, status)
			}
		}
	}
	time.Sleep(200 * time.Millisecond) // let LISTEN take effect
	if _, err := s.StartRun(t.Context(), bindings.StartRunInput{TenantID: tenant, RunID: "q", FlowID: "agent.turn", FlowVersion: "1.1.0", Status: bindings.RunQueued}); err != nil {
		t.Fatal(err)
	}
	expect("a queued run", "q", bindings.RunQueued)
	if _, err := s.StartRun(t.Context(), bindings.StartRunInput{TenantID: tenant, RunID: "r", FlowID: "agent.turn", FlowVersion: "1.1.0", Owner: "o", LeaseTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseLease(t.Context(), tenant, "r", "o"); err != nil {
		t.Fatal(err)
	}
	expect("a released lease", "r", bindings.RunRunning)
	if _, err := s.RequestApproval(t.Context(), bindings.ApprovalRequest{TenantID: tenant, ID: "r/ap", RunID: "r", ReviewerRole: "standard"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ResolveApproval(t.Context(), tenant, "r/ap", bindings.ApprovalDecision{Approved: true, Reviewer: "rev"}); err != nil {
		t.Fatal(err)
	}
	expect("a decided approval", "r", "")
	cancel()
	for range ch { // drained and closed once the watch ended
	}
}

// TestClaimUsesTheClaimIndex checks with EXPLAIN ANALYZE that a claim
// across tenants, among 20,000 finished runs, finds the claimable ones
// through agent_runs_claim_idx (the finished runs are not in it), with the
// custom and the generic plan alike.
func TestClaimUsesTheClaimIndex(t *testing.T) {
	pool := testPool(t)
	ctx := t.Context()
	tenant := "claim-explain-" + randomID()[:8]
	if _, err := pool.Exec(ctx, `INSERT INTO agent_runs (tenant_id, id, flow_id, flow_version, status, created_at, updated_at)
		SELECT $1, 'done-' || g, 'agent.turn', '1.1.0', 'completed', now() - interval '1 day', now() FROM generate_series(1, 20000) AS g
		UNION ALL
		SELECT $1, 'queued-' || g, 'agent.turn', '1.1.0', 'queued', now(), now() FROM generate_series(1, 20) AS g`, tenant); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE agent_runs`); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		plan := explainAnalyze(t, pool, mode, sqlClaimRuns, "w", now.Add(time.Minute), now, 8, []string(nil))
		var usesIndex bool
		plan.walk(func(n planNode) {
			if n.IndexName == "agent_runs_claim_idx" {
				usesIndex = true
			}
		})
		if !usesIndex {
			t.Errorf("%s: the claim does not use agent_runs_claim_idx: %+v", mode, plan)
		}
	}
}
