package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/bindingstest"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

func uniqueTenant(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// storeFinishedRun stores a run with entries journal entries, a snapshot
// and one approval, completed, its lease released.
func storeFinishedRun(t *testing.T, s *Store, tenant, run string, status bindings.RunStatus, entries int) {
	t.Helper()
	ctx := t.Context()
	if err := s.Write(ctx, bindings.RunSnapshotWriteInput{TenantID: tenant, RunID: run, FlowID: "agent.turn", FlowVersion: "1.1.0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: run, Owner: "w", LeaseTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for i := range entries {
		if _, _, err := s.AppendStep(ctx, bindings.AppendStepInput{TenantID: tenant, RunID: run, Owner: "w",
			Entry: bindings.JournalEntry{Key: fmt.Sprintf("k%d", i), Status: bindings.StepCompleted}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RequestApproval(ctx, bindings.ApprovalRequest{TenantID: tenant, ID: run + "/a", RunID: run, ExpiresAt: s.now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRunStatus(ctx, tenant, run, status); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseLease(ctx, tenant, run, "w"); err != nil {
		t.Fatal(err)
	}
}

// TestPruneWorksInBatches prunes more runs than a batch holds: every batch
// is its own transaction, and the stats add up over them.
func TestPruneWorksInBatches(t *testing.T) {
	pool := testPool(t)
	clock := bindingstest.NewClock(time.Time{})
	s := New(pool, &Options{Now: clock.Now})
	tenant := uniqueTenant("prune-batches")
	for i := range 7 {
		storeFinishedRun(t, s, tenant, fmt.Sprintf("r%d", i), bindings.RunCompleted, 2)
	}
	if _, err := s.StartRun(t.Context(), bindings.StartRunInput{TenantID: tenant, RunID: "running", Owner: "w", LeaseTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	st, err := s.prune(t.Context(), tenant, clock.Now(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := (bindings.PruneStats{Runs: 7, JournalEntries: 14, Snapshots: 7, Approvals: 7}); st != want {
		t.Fatalf("Prune in batches of 3: %+v, want %+v", st, want)
	}
	var left int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM agent_runs WHERE tenant_id = $1`, tenant).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 1 {
		t.Fatalf("%d runs left, want the running one", left)
	}
}

// TestRetentionQueriesUseTheirIndexes checks the plans of Prune's batch
// and of the sweep's listing (with sequential scans discouraged, as on a
// table too big to scan): each is served by the index the baseline
// migration has for it.
func TestRetentionQueriesUseTheirIndexes(t *testing.T) {
	pool := testPool(t)
	ctx := t.Context()
	plan := func(sql string, args ...any) string {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.WithoutCancel(ctx))
		if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, "EXPLAIN "+sql, args...)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	if p := plan(sqlPruneBatch, "t", now, now, 200); !strings.Contains(p, "agent_runs_prune_idx") {
		t.Errorf("Prune's batch does not use agent_runs_prune_idx:\n%s", p)
	}
	if p := plan(sqlExpiredApprovalsAfter, now, 100, now.Add(-time.Hour), "t", "a"); !strings.Contains(p, "agent_approvals_expiry_idx") {
		t.Errorf("the sweep's listing does not use agent_approvals_expiry_idx:\n%s", p)
	}
}

// TestSweepAcrossTenantsAsApplicationRole runs the sweep's listing and a
// Prune as a role subject to row-level security. Until the role is a
// member of kindgi_sweeper the listing sees no tenant's approvals; once
// granted, it sees the expired approvals of every tenant through the sweep
// policies, and nothing else changes: without kindgi.sweep no row is
// visible, and with it nothing can be changed or deleted.
func TestSweepAcrossTenantsAsApplicationRole(t *testing.T) {
	app, role := appRolePool(t)
	ctx := t.Context()
	clock := bindingstest.NewClock(time.Date(2019, 6, 1, 0, 0, 0, 0, time.UTC))
	s := New(app, &Options{Now: clock.Now})
	a, b := uniqueTenant("sweep-a"), uniqueTenant("sweep-b")
	for _, tenant := range []string{a, b} {
		if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: "r", Owner: "w", LeaseTTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RequestApproval(ctx, bindings.ApprovalRequest{TenantID: tenant, ID: "r/a", RunID: "r", ExpiresAt: clock.Now().Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetRunStatus(ctx, tenant, "r", bindings.RunSuspended); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(time.Hour)
	sweptTenants := func() map[string]bool {
		t.Helper()
		refs, err := s.ExpiredApprovals(ctx, bindings.ExpiredApprovalsInput{Now: clock.Now(), Limit: 1000})
		if err != nil {
			t.Fatalf("ExpiredApprovals as the application role: %v", err)
		}
		seen := map[string]bool{}
		for _, r := range refs {
			if r.TenantID == a || r.TenantID == b {
				seen[r.TenantID] = true
			}
		}
		return seen
	}
	if seen := sweptTenants(); len(seen) != 0 {
		t.Fatalf("the sweep of a role without %s saw tenants %v, want none", sweeperRole, seen)
	}
	grantSweeper(t, role)
	if seen := sweptTenants(); !seen[a] || !seen[b] {
		t.Fatalf("the sweep of a member of %s saw tenants %v, want both %s and %s", sweeperRole, seen, a, b)
	}
	// The application role without the sweep setting sees nothing; with
	// it, it may read but not write.
	tx, err := app.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM agent_approvals WHERE tenant_id IN ($1, $2)`, a, b).Scan(&n); err != nil || n != 0 {
		t.Fatalf("without any setting the role sees %d approvals (%v), want 0", n, err)
	}
	if _, err := tx.Exec(ctx, setSweepSQL); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM agent_approvals WHERE tenant_id IN ($1, $2)`, a, b).Scan(&n); err != nil || n != 2 {
		t.Fatalf("with the sweep setting the role sees %d approvals (%v), want 2", n, err)
	}
	for _, q := range []string{
		`UPDATE agent_approvals SET status = 'approved' WHERE tenant_id IN ($1, $2)`,
		`DELETE FROM agent_approvals WHERE tenant_id IN ($1, $2)`,
		`UPDATE agent_runs SET status = 'completed' WHERE tenant_id IN ($1, $2)`,
		`DELETE FROM agent_runs WHERE tenant_id IN ($1, $2)`,
	} {
		tag, err := tx.Exec(ctx, q, a, b)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if tag.RowsAffected() != 0 {
			t.Fatalf("%s with the sweep setting changed %d rows", q, tag.RowsAffected())
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// Marking and pruning are tenant-scoped calls, and work as the role.
	if ap, err := s.MarkApprovalExpired(ctx, a, "r/a"); err != nil || ap.Status != bindings.ApprovalExpired {
		t.Fatalf("MarkApprovalExpired as the application role: %+v, %v", ap, err)
	}
	if _, err := s.MarkApprovalExpired(ctx, b, "r/b"); agents.CodeOf(err) != agents.CodeApprovalNotFound {
		t.Fatalf("MarkApprovalExpired of an unknown approval: %v", err)
	}
	clock.Advance(time.Hour)
	st, err := s.Prune(ctx, a, clock.Now())
	if err != nil || st.Runs != 1 || st.Approvals != 1 {
		t.Fatalf("Prune of the swept parked run as the application role: %+v, %v", st, err)
	}
	if st, err := s.Prune(ctx, b, clock.Now()); err != nil || st.Runs != 0 {
		t.Fatalf("Prune of a run whose approval was never marked: %+v, %v", st, err)
	}
}

// mailModel asks for acme.lookup until it sees a tool result, then
// answers, whatever order runs call it in; it counts its calls.
type mailModel struct{ calls atomic.Int64 }

func (m *mailModel) ID() string { return "mail-model" }

func (m *mailModel) Models() []bindings.ModelInfo {
	return []bindings.ModelInfo{{ID: "m1", Features: []string{"tool-use"}}}
}

func (m *mailModel) Generate(_ context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	m.calls.Add(1)
	if req.Messages[len(req.Messages)-1].Role == bindings.ChatTool {
		return bindings.GenerateResponse{Text: "done", FinishReason: "stop"}, nil
	}
	return bindings.GenerateResponse{
		ToolCalls:    []bindings.ToolCall{{ID: "call_1", Name: "acme.lookup", Arguments: json.RawMessage(`{"q":"x"}`)}},
		FinishReason: "tool_calls",
	}, nil
}

// TestExpireApprovalsTwoConcurrentSweepsOnPostgres parks turns on pgstore
// (in a schema of its own, so no other test's approvals are listed), lets
// the approvals expire, and runs two sweeps at once, each with its own
// pool as two workers would: every run is moved to its on-timeout action
// (deny) exactly once, the gated tool never runs, and Prune then deletes
// the finished runs.
func TestExpireApprovalsTwoConcurrentSweepsOnPostgres(t *testing.T) {
	pool, _ := freshSchemaPool(t)
	ctx := t.Context()
	if err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	clock := bindingstest.NewClock(time.Time{})
	tenant := uniqueTenant("expire")
	tools := registry.NewTools()
	var ran atomic.Int64
	if err := tools.Add(tenant, bindings.ToolDescriptor{ID: "acme.lookup", Version: "1.0.0", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
			ran.Add(1)
			return json.RawMessage(`{}`), nil
		}); err != nil {
		t.Fatal(err)
	}
	a := lookupAgent(t, agent.GateAlwaysAsk)
	hour := time.Hour.Milliseconds()
	model := &mailModel{}
	bindingsOn := func(s *Store) turn.Bindings {
		return turn.Bindings{
			Providers: bindings.Providers{model}, Tools: tools,
			Conversations: s, Snapshots: s, Runs: s, Hitl: s, Now: clock.Now, Journal: s,
			TenantPolicy: &bindings.TenantPolicy{Hitl: &bindings.HitlSpec{MaxTimeoutMs: &hour, OnTimeout: turn.OnTimeoutDeny}},
		}
	}
	s := New(pool, &Options{Now: clock.Now})
	const runs = 6
	ids := make([]string, runs)
	for i := range runs {
		c, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, AgentID: a.ID, AgentVersion: a.Version})
		if err != nil {
			t.Fatal(err)
		}
		res, err := turn.Invoke(ctx, turn.Input{TenantID: tenant, Agent: a, ConversationID: c.ID, UserMessage: "look it up"}, bindingsOn(s))
		if err != nil || res.Status != turn.StatusSuspended {
			t.Fatalf("Invoke %d: %+v, %v", i, res, err)
		}
		ids[i] = res.RunID
	}
	clock.Advance(2 * time.Hour)
	lookup := func(_ context.Context, tenantID, id, version string) (agent.Agent, error) {
		if tenantID != tenant || id != a.ID || version != a.Version {
			return agent.Agent{}, &agents.AgentNotFoundError{ID: id, Version: version}
		}
		return a, nil
	}
	var wg sync.WaitGroup
	stats := make([]turn.ExpireStats, 2)
	errs := make([]error, 2)
	for i := range stats {
		worker, err := newPool(pool.Config())
		if err != nil {
			t.Fatal(err)
		}
		defer worker.Close()
		ws := New(worker, &Options{Now: clock.Now})
		wg.Go(func() { stats[i], errs[i] = turn.ExpireApprovals(ctx, bindingsOn(ws), lookup, clock.Now()) })
	}
	wg.Wait()
	moved := 0
	for i := range stats {
		if errs[i] != nil || stats[i].Failed != 0 {
			t.Fatalf("sweep %d: %+v, %v", i, stats[i], errs[i])
		}
		moved += stats[i].Moved
	}
	if moved != runs {
		t.Fatalf("two sweeps moved %d approvals (%+v), want %d", moved, stats, runs)
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("the gated tool ran %d times", n)
	}
	if got := model.calls.Load(); got != 2*runs {
		t.Errorf("%d model calls, want %d (one to park, one after the denial, per run)", got, 2*runs)
	}
	for _, id := range ids {
		r, err := s.GetRun(ctx, tenant, id)
		if err != nil || r.Status != bindings.RunCompleted {
			t.Errorf("run %s after the sweeps: %+v, %v", id, r, err)
		}
	}
	if st, err := turn.ExpireApprovals(ctx, bindingsOn(s), lookup, clock.Now()); err != nil || st.Listed != 0 {
		t.Errorf("a third sweep: %+v, %v", st, err)
	}
	clock.Advance(time.Minute)
	st, err := s.Prune(ctx, tenant, clock.Now())
	if err != nil || st.Runs != runs || st.Snapshots != runs || st.Approvals != runs {
		t.Fatalf("Prune after the sweeps: %+v, %v", st, err)
	}
}

// TestDeletingARunDeletesItsJournal holds the journal's replacement for a
// foreign key (agent_runs_journal_delete): a run deleted by any statement
// takes its entries with it and no other run's, so a later run created
// under the same id starts with an empty journal; and no entry is stored
// for a run that does not exist.
func TestDeletingARunDeletesItsJournal(t *testing.T) {
	ctx := t.Context()
	s := New(testPool(t), nil)
	tenant := uniqueTenant("run-delete")
	start := func(run string) {
		t.Helper()
		if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: run, FlowID: "f", FlowVersion: "1"}); err != nil {
			t.Fatal(err)
		}
	}
	appendStep := func(run, key string) error {
		_, _, err := s.AppendStep(ctx, bindings.AppendStepInput{TenantID: tenant, RunID: run, Entry: bindings.JournalEntry{Key: key, Status: bindings.StepCompleted, Output: []byte(`{"ok":true}`)}})
		return err
	}
	entries := func(run string) int {
		t.Helper()
		var n int
		if err := testPool(t).QueryRow(ctx, `SELECT count(*) FROM agent_run_journal WHERE tenant_id = $1 AND run_id = $2`, tenant, run).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, run := range []string{"r1", "r2", "r3"} {
		start(run)
		for _, key := range []string{"a", "b"} {
			if err := appendStep(run, key); err != nil {
				t.Fatal(err)
			}
		}
	}
	// One statement deleting one run, another deleting two of them, each
	// in a transaction under the tenant, as an operator's would be.
	for _, del := range [][]string{{"r1"}, {"r2", "r3"}} {
		if _, err := s.exec(ctx, "delete runs", tenant, `DELETE FROM agent_runs WHERE tenant_id = $1 AND id = ANY($2)`, tenant, del); err != nil {
			t.Fatal(err)
		}
		for _, run := range []string{"r1", "r2", "r3"} {
			deleted := run <= del[len(del)-1]
			if n := entries(run); deleted && n != 0 || !deleted && n != 2 {
				t.Fatalf("after deleting %v: run %s has %d entries", del, run, n)
			}
		}
	}
	start("r1")
	got, err := s.ReadJournal(ctx, tenant, "r1")
	if err != nil || len(got) != 0 {
		t.Fatalf("journal of a new run under a deleted run's id: %+v, %v", got, err)
	}
	if err := appendStep("missing", "a"); err == nil {
		t.Fatal("an entry of a run that does not exist was appended")
	}
	if n := entries("missing"); n != 0 {
		t.Fatalf("%d entries stored for a run that does not exist", n)
	}
}

// TestConcurrentDeletesLeaveNoOrphans races appends against the delete of
// their parent: writers append journal entries to a run and messages to a
// conversation while another connection deletes both. The append tables
// have no foreign keys, so this holds the functions' order (lock the
// parent, then insert) and the delete triggers together: once everything
// has returned, no entry or message is left whose run or conversation is
// gone, whichever side won each race.
func TestConcurrentDeletesLeaveNoOrphans(t *testing.T) {
	ctx := t.Context()
	s := New(testPool(t), nil)
	tenant := uniqueTenant("orphans")
	orphans := func() (entries, messages int) {
		t.Helper()
		err := testPool(t).QueryRow(ctx, `SELECT
			(SELECT count(*) FROM agent_run_journal j WHERE j.tenant_id = $1
				AND NOT EXISTS (SELECT 1 FROM agent_runs r WHERE r.tenant_id = j.tenant_id AND r.id = j.run_id)),
			(SELECT count(*) FROM agent_conversation_messages m WHERE m.tenant_id = $1
				AND NOT EXISTS (SELECT 1 FROM agent_conversations c WHERE c.tenant_id = m.tenant_id AND c.id = m.conversation_id))`,
			tenant).Scan(&entries, &messages)
		if err != nil {
			t.Fatal(err)
		}
		return entries, messages
	}
	for round := range 20 {
		run, conv := fmt.Sprintf("r%d", round), fmt.Sprintf("c%d", round)
		if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: run, FlowID: "f", FlowVersion: "1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, ID: conv, AgentID: "a", AgentVersion: "1"}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := range 10 {
					// Errors are expected once the parent is gone.
					_, _, _ = s.AppendStep(ctx, bindings.AppendStepInput{TenantID: tenant, RunID: run, Entry: bindings.JournalEntry{Key: fmt.Sprintf("w%d-%d", w, i), Status: bindings.StepCompleted}})
					_, _ = s.AppendMessage(ctx, bindings.AppendMessageInput{TenantID: tenant, ConversationID: conv, Role: bindings.RoleAgent, Content: "x"})
				}
			})
		}
		wg.Go(func() {
			time.Sleep(time.Duration(round%5) * time.Millisecond)
			for table, id := range map[string]string{"agent_runs": run, "agent_conversations": conv} {
				if _, err := s.exec(ctx, "delete", tenant, `DELETE FROM `+table+` WHERE tenant_id = $1 AND id = $2`, tenant, id); err != nil {
					t.Error(err)
				}
			}
		})
		wg.Wait()
		if e, m := orphans(); e != 0 || m != 0 {
			t.Fatalf("round %d: %d journal entries and %d messages outlived their run and conversation", round, e, m)
		}
	}
}
