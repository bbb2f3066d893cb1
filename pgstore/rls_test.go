package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kindgi/agents/bindings"
)

// appRolePool creates a LOGIN role that neither owns the tables nor is a
// superuser nor bypasses row-level security, grants it the table rights an
// application needs, and returns a pool connected as it and its name.
func appRolePool(t *testing.T) (*pgxpool.Pool, string) {
	t.Helper()
	admin := testPool(t)
	ctx := context.Background()
	role := "kindgi_app_" + suffix8()
	// A password lets the role log in whether the server trusts local TCP
	// connections or asks for scram-sha-256.
	password := randomID()
	for _, q := range []string{
		"CREATE ROLE " + role + " LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE PASSWORD '" + password + "'",
		"GRANT CONNECT ON DATABASE " + testEnv.name + " TO " + role,
		"GRANT USAGE ON SCHEMA public TO " + role,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO " + role,
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	cfg := testEnv.config.Copy()
	cfg.ConnConfig.User = role
	cfg.ConnConfig.Password = password
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Close()
		// DROP ROLE also ends the role's membership of kindgi_sweeper.
		for _, q := range []string{"DROP OWNED BY " + role, "DROP ROLE " + role} {
			if _, err := admin.Exec(context.Background(), q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	return pool, role
}

// rlsCase is the settings a transaction of checkTenantRows makes.
type rlsCase struct {
	name   string
	tenant *string // kindgi.tenant_id; nil: not set
	sweep  bool    // kindgi.sweep set as ExpiredApprovals sets it
	// visible counts the rows of the tenant under test each table shows;
	// every table not named shows no row at all.
	visible map[string]int
}

// checkTenantRows runs, for every tenant-scoped table, transactions of
// pool with tc's settings: tenant's rows are visible only as tc.visible
// says, and none can be updated, deleted or inserted. Each transaction is
// rolled back, so a write the policies wrongly let through leaves nothing
// behind.
func checkTenantRows(t *testing.T, pool *pgxpool.Pool, tenant string, tc rlsCase) {
	t.Helper()
	ctx := t.Context()
	for _, table := range TenantScopedTables {
		inTx(t, pool, tc.tenant, tc.sweep, func(tx pgx.Tx) {
			var all, own int
			if err := tx.QueryRow(ctx, "SELECT count(*), count(*) FILTER (WHERE tenant_id = $1) FROM "+table, tenant).Scan(&all, &own); err != nil {
				t.Fatalf("%s: select: %v", table, err)
			}
			if want, ok := tc.visible[table]; ok {
				if own != want {
					t.Errorf("%s: %d rows of the tenant visible, want %d", table, own, want)
				}
			} else if all != 0 {
				t.Errorf("%s: %d rows visible, want 0", table, all)
			}
			tag, err := tx.Exec(ctx, "UPDATE "+table+" SET tenant_id = tenant_id WHERE tenant_id = $1", tenant)
			if err != nil {
				t.Fatalf("%s: update: %v", table, err)
			}
			if tag.RowsAffected() != 0 {
				t.Errorf("%s: update changed %d rows of the tenant", table, tag.RowsAffected())
			}
			tag, err = tx.Exec(ctx, "DELETE FROM "+table+" WHERE tenant_id = $1", tenant)
			if err != nil {
				t.Fatalf("%s: delete: %v", table, err)
			}
			if tag.RowsAffected() != 0 {
				t.Errorf("%s: delete removed %d rows of the tenant", table, tag.RowsAffected())
			}
		})
		// Inserting a row of the tenant is refused by the policy's WITH CHECK.
		inTx(t, pool, tc.tenant, tc.sweep, func(tx pgx.Tx) {
			_, err := tx.Exec(ctx, "INSERT INTO "+table+" SELECT * FROM json_populate_record(NULL::"+table+", $1)", sampleRow(table, tenant))
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
				t.Errorf("%s: insert of the tenant's row: got %v, want a row-level security violation (42501)", table, err)
			}
		})
	}
}

// TestRowLevelSecurityWithNonOwnerRole shows, as a role that does not own
// the tables, that pgstore works through the policies, and that without
// the tenant setting, or with another tenant's, no row of a tenant is
// visible or writable; setting kindgi.sweep changes nothing for a role
// that is not a member of kindgi_sweeper. Once granted kindgi_sweeper, the
// same role with kindgi.sweep set reads the tenant's suspended run and
// pending expiring approval, and still nothing else, and writes nothing.
func TestRowLevelSecurityWithNonOwnerRole(t *testing.T) {
	app, role := appRolePool(t)
	ctx := t.Context()
	sfx := suffix8()
	a, other := "rls-a-"+sfx, "rls-b-"+sfx

	// pgstore, connected as the application role, writes a row in every
	// table; the run is parked on an approval that expires, the rows the
	// sweep policies are about.
	s := New(app, nil)
	if _, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: a, ID: "c1", AgentID: "acme.agent", AgentVersion: "1.0.0"}); err != nil {
		t.Fatalf("OpenConversation as the app role: %v", err)
	}
	if _, err := s.AppendMessage(ctx, bindings.AppendMessageInput{TenantID: a, ConversationID: "c1", Role: bindings.RoleUser, Content: "hello"}); err != nil {
		t.Fatalf("AppendMessage: %v", err)
	}
	if err := s.Write(ctx, bindings.RunSnapshotWriteInput{TenantID: a, RunID: "r1", FlowID: "agent.turn", FlowVersion: "1.1.0"}); err != nil {
		t.Fatalf("snapshot Write: %v", err)
	}
	if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: a, RunID: "r1", FlowID: "agent.turn", FlowVersion: "1.1.0", Owner: "w1", LeaseTTL: 60e9}); err != nil {
		t.Fatalf("StartRun: %v", err)
	}
	if _, _, err := s.AppendStep(ctx, bindings.AppendStepInput{TenantID: a, RunID: "r1", Entry: bindings.JournalEntry{Key: "setup", Node: "setup", Status: bindings.StepStarted}}); err != nil {
		t.Fatalf("AppendStep: %v", err)
	}
	if _, err := s.PutFact(ctx, bindings.Fact{TenantID: a, ID: "f1", Type: "acme.clause", Text: "payment terms"}); err != nil {
		t.Fatalf("PutFact: %v", err)
	}
	if err := s.RecordCompliance(ctx, bindings.ComplianceRecord{TenantID: a, RunID: "r1", Key: "evaluate-guardrails/0", GuardrailID: "g", Passed: true}); err != nil {
		t.Fatalf("RecordCompliance: %v", err)
	}
	if _, err := s.RequestApproval(ctx, bindings.ApprovalRequest{TenantID: a, ID: "ap1", RunID: "r1", Arguments: json.RawMessage(`{"secret":"tool arguments"}`), ExpiresAt: time.Now().Add(-time.Minute)}); err != nil {
		t.Fatalf("RequestApproval: %v", err)
	}
	if err := s.SetRunStatus(ctx, a, "r1", bindings.RunSuspended); err != nil {
		t.Fatalf("SetRunStatus: %v", err)
	}
	if _, err := s.Take(ctx, bindings.QuotaTakeInput{TenantID: a, Quota: bindings.Quota{Name: "q", Scope: bindings.QuotaTurns, Limit: 1, WindowSeconds: 60}, Unit: "r1/setup", Amount: 1}); err != nil {
		t.Fatalf("Take: %v", err)
	}

	// The rows exist (the superuser bypasses row-level security), and the
	// run and approval are those the sweep policies admit.
	admin := testPool(t)
	for _, table := range TenantScopedTables {
		var n int
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM "+table+" WHERE tenant_id = $1", a).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("%s holds %d rows of tenant a, want 1", table, n)
		}
	}
	var parked bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM agent_approvals a JOIN agent_runs r ON r.tenant_id = a.tenant_id AND r.id = a.run_id
		WHERE a.tenant_id = $1 AND a.status = 'pending' AND a.expires_at < now() AND r.status = 'suspended')`, a).Scan(&parked); err != nil || !parked {
		t.Fatalf("tenant a's run is not parked on an expired approval (%v)", err)
	}

	cases := []rlsCase{
		{name: "NoSetting"},
		{name: "EmptySetting", tenant: new("")},
		{name: "OtherTenant", tenant: &other},
		{name: "SweepSettingWithoutSweeperRole", sweep: true},
		{name: "SweepSettingAndOtherTenantWithoutSweeperRole", tenant: &other, sweep: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkTenantRows(t, app, a, tc) })
	}
	// Without the role the sweep lists none of a's approvals.
	refs, err := s.ExpiredApprovals(ctx, bindings.ExpiredApprovalsInput{Now: time.Now(), Limit: 1000})
	if err != nil {
		t.Fatalf("ExpiredApprovals without %s: %v", sweeperRole, err)
	}
	for _, r := range refs {
		if r.TenantID == a {
			t.Fatalf("ExpiredApprovals without %s listed %+v", sweeperRole, r)
		}
	}

	// The same role, granted kindgi_sweeper (on the connections it
	// already has open): the sweep setting reveals the suspended run and
	// the pending approval, nothing else, and no write.
	grantSweeper(t, role)
	sweepCases := []rlsCase{
		{name: "SweeperRoleWithoutSetting"},
		{name: "SweeperRoleAndOtherTenant", tenant: &other},
		{name: "SweeperRoleAndSweepSetting", sweep: true, visible: map[string]int{"agent_approvals": 1, "agent_runs": 1}},
		{name: "SweeperRoleAndSweepSettingAndOtherTenant", tenant: &other, sweep: true, visible: map[string]int{"agent_approvals": 1, "agent_runs": 1}},
	}
	for _, tc := range sweepCases {
		t.Run(tc.name, func(t *testing.T) { checkTenantRows(t, app, a, tc) })
	}

	// pgstore as the other tenant sees nothing of a's, sweeper or not.
	if _, err := s.GetConversation(ctx, other, "c1"); err == nil {
		t.Fatal("another tenant read a's conversation")
	}
	if _, err := s.GetApproval(ctx, other, "ap1"); err == nil {
		t.Fatal("another tenant read a's approval")
	}
	if _, err := s.GetRun(ctx, other, "r1"); err == nil {
		t.Fatal("another tenant read a's run")
	}
}

// inTx runs fn in a transaction of pool, with kindgi.tenant_id set
// transaction-locally to *tenant (unless nil) and, when sweep, kindgi.sweep
// set as ExpiredApprovals sets it, and rolls it back.
func inTx(t *testing.T, pool *pgxpool.Pool, tenant *string, sweep bool, fn func(tx pgx.Tx)) {
	t.Helper()
	ctx := t.Context()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if tenant != nil {
		if _, err := tx.Exec(ctx, setTenantSQL, *tenant); err != nil {
			t.Fatal(err)
		}
	}
	if sweep {
		if _, err := tx.Exec(ctx, setSweepSQL); err != nil {
			t.Fatal(err)
		}
	}
	fn(tx)
}

// sampleRow is a JSON row of table for tenant: every NOT NULL column
// without a default filled in.
func sampleRow(table, tenant string) map[string]any {
	row := map[string]any{"tenant_id": tenant, "id": "rls-insert", "created_at": "2026-01-01T00:00:00Z"}
	switch table {
	case "agent_conversations":
		row["agent_id"], row["agent_version"] = "a", "1.0.0"
		row["status"], row["opened_at"], row["last_activity_at"] = "open", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"
		row["turn_count"], row["message_count"] = 0, 0
		row["project_id"], row["title"], row["participant_id"] = "", "", ""
	case "agent_conversation_messages":
		row["conversation_id"], row["seq"], row["role"], row["content"] = "c1", 99, "user", "x"
		row["tool_call_id"], row["turn_number"], row["run_id"] = "", 0, ""
	case "agent_run_snapshots":
		row["run_id"], row["flow_id"], row["flow_version"] = "rls-insert", "f", "1"
		for _, c := range []string{"agent_id", "agent_version", "conversation_id", "project_id"} {
			row[c] = ""
		}
	case "agent_runs":
		row["flow_id"], row["flow_version"], row["status"], row["lease_owner"], row["last_seq"] = "f", "1", "running", "", 0
		row["updated_at"] = "2026-01-01T00:00:00Z"
	case "agent_run_journal":
		row["run_id"], row["seq"], row["key"], row["phase"], row["node"], row["status"] = "r1", 99, "k", "started", "n", "started"
		row["at"] = "2026-01-01T00:00:00Z"
	case "agent_memory_facts":
		row["type"], row["text"], row["search"], row["project_id"], row["conversation_id"] = "t", "x", "x", "", ""
	case "agent_approvals":
		for _, c := range []string{"run_id", "conversation_id", "tool_call_id", "tool_id", "tool_version", "reviewer_role", "reason", "reviewer", "comment"} {
			row[c] = ""
		}
		row["status"] = "pending"
	case "agent_compliance_records":
		row["run_id"], row["key"], row["guardrail_id"], row["passed"] = "r1", "k", "g", true
		row["evaluated_at"] = "2026-01-01T00:00:00Z"
	case "agent_quotas":
		row["name"], row["scope"], row["tool_id"], row["quota_limit"], row["window_seconds"] = "rls-insert", "turns", "", 1, 60
		row["on_exceeded"], row["updated_at"] = "", "2026-01-01T00:00:00Z"
	case "agent_quota_units":
		row["quota"], row["unit"], row["at"], row["amount"] = "q", "rls-insert", "2026-01-01T00:00:00Z", 1
	}
	return row
}

// TestTenantScopedTablesHavePoliciesAndTenantLedKeys checks the catalog:
// every listed table exists, leads its primary key with tenant_id, has
// row-level security enabled and forced, and has the tenant isolation
// policy on kindgi.tenant_id for every command and every role; no table of
// the schema is missing from the list; and the only other policies are the
// sweep's two, read-only and for members of kindgi_sweeper alone.
func TestTenantScopedTablesHavePoliciesAndTenantLedKeys(t *testing.T) {
	pool := testPool(t)
	ctx := t.Context()
	var all []string
	rows, _ := pool.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> $1 ORDER BY 1`, VersionTable)
	all, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, table := range TenantScopedTables {
		listed[table] = true
	}
	for _, table := range all {
		if !listed[table] {
			t.Errorf("table %s is not in TenantScopedTables", table)
		}
	}
	for _, table := range TenantScopedTables {
		var enabled, forced bool
		var firstKey string
		var policy string
		err := pool.QueryRow(ctx, `
			SELECT c.relrowsecurity, c.relforcerowsecurity,
			       (SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
			        WHERE i.indrelid = c.oid AND i.indisprimary),
			       COALESCE((SELECT p.qual || ' / ' || p.with_check FROM pg_policies p
			                 WHERE p.schemaname = 'public' AND p.tablename = c.relname
			                   AND p.policyname = 'agent_tenant_isolation' AND p.cmd = 'ALL' AND p.permissive = 'PERMISSIVE'
			                   AND p.roles = '{public}'::name[]), '')
			FROM pg_class c WHERE c.oid = ('public.' || $1)::regclass`, table).Scan(&enabled, &forced, &firstKey, &policy)
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		if !enabled || !forced {
			t.Errorf("%s: row level security enabled=%v forced=%v, want both", table, enabled, forced)
		}
		if firstKey != "tenant_id" {
			t.Errorf("%s: primary key starts with %q, want tenant_id", table, firstKey)
		}
		if want := "(tenant_id = current_setting('kindgi.tenant_id'::text, true))"; strings.Count(policy, want) != 2 {
			t.Errorf("%s: tenant isolation policy %q does not check %s for reads and writes", table, policy, want)
		}
	}
	// The only other policies are the sweep's: permissive, read-only, for
	// members of kindgi_sweeper alone, and only under kindgi.sweep.
	if d := cmp.Diff(sweepPolicies, policiesBeyondTenantIsolation(t, pool, "public")); d != "" {
		t.Errorf("policies beyond tenant isolation (-want +got):\n%s", d)
	}
}
