package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kindgi/agents/bindings"
)

// appRolePool creates a LOGIN role that neither owns the tables nor is a
// superuser nor bypasses row-level security, grants it the table rights an
// application needs, and returns a pool connected as it.
func appRolePool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	admin := testPool(t)
	ctx := context.Background()
	var b [4]byte
	_, _ = rand.Read(b[:])
	role := "kindgi_app_" + hex.EncodeToString(b[:])
	// A password lets the role log in whether the server trusts local TCP
	// connections or asks for scram-sha-256.
	password := randomID()
	for _, q := range []string{
		"CREATE ROLE " + role + " LOGIN NOSUPERUSER NOBYPASSRLS PASSWORD '" + password + "'",
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
		for _, q := range []string{"DROP OWNED BY " + role, "DROP ROLE " + role} {
			if _, err := admin.Exec(context.Background(), q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	return pool
}

// TestRowLevelSecurityWithNonOwnerRole shows, as a role that does not own
// the tables, that pgstore works through the policies, and that without
// the tenant setting, or with another tenant's, no row of a tenant is
// visible or writable.
func TestRowLevelSecurityWithNonOwnerRole(t *testing.T) {
	app := appRolePool(t)
	ctx := t.Context()
	var b [4]byte
	_, _ = rand.Read(b[:])
	a, other := "rls-a-"+hex.EncodeToString(b[:]), "rls-b-"+hex.EncodeToString(b[:])

	// pgstore, connected as the application role, writes a row in every table.
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
	if _, err := s.RequestApproval(ctx, bindings.ApprovalRequest{TenantID: a, ID: "ap1", RunID: "r1"}); err != nil {
		t.Fatalf("RequestApproval: %v", err)
	}

	// The rows exist (the superuser bypasses row-level security).
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

	cases := []struct {
		name    string
		setting *string // nil: kindgi.tenant_id is not set
	}{
		{"NoSetting", nil},
		{"EmptySetting", new("")},
		{"OtherTenant", &other},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, table := range TenantScopedTables {
				// Each check runs in a transaction that is rolled back, so a
				// write the policy wrongly let through leaves nothing behind.
				inTx(t, app, tc.setting, func(tx pgx.Tx) {
					var n int
					if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
						t.Fatalf("%s: select: %v", table, err)
					}
					if n != 0 {
						t.Errorf("%s: %d rows visible, want 0", table, n)
					}
					tag, err := tx.Exec(ctx, "UPDATE "+table+" SET tenant_id = tenant_id WHERE tenant_id = $1", a)
					if err != nil {
						t.Fatalf("%s: update: %v", table, err)
					}
					if tag.RowsAffected() != 0 {
						t.Errorf("%s: update changed %d rows of tenant a", table, tag.RowsAffected())
					}
					tag, err = tx.Exec(ctx, "DELETE FROM "+table+" WHERE tenant_id = $1", a)
					if err != nil {
						t.Fatalf("%s: delete: %v", table, err)
					}
					if tag.RowsAffected() != 0 {
						t.Errorf("%s: delete removed %d rows of tenant a", table, tag.RowsAffected())
					}
				})
				// Inserting a row of tenant a is refused by the policy's WITH CHECK.
				inTx(t, app, tc.setting, func(tx pgx.Tx) {
					_, err := tx.Exec(ctx, "INSERT INTO "+table+" SELECT * FROM json_populate_record(NULL::"+table+", $1)", sampleRow(table, a))
					var pgErr *pgconn.PgError
					if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
						t.Errorf("%s: insert of tenant a's row: got %v, want a row-level security violation (42501)", table, err)
					}
				})
			}
		})
	}

	// pgstore as the other tenant sees nothing of a's.
	if _, err := s.GetConversation(ctx, other, "c1"); err == nil {
		t.Fatal("another tenant read a's conversation")
	}
}

// inTx runs fn in a transaction of pool, with kindgi.tenant_id set
// transaction-locally to *setting (unless nil), and rolls it back.
func inTx(t *testing.T, pool *pgxpool.Pool, setting *string, fn func(tx pgx.Tx)) {
	t.Helper()
	ctx := t.Context()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if setting != nil {
		if _, err := tx.Exec(ctx, setTenantSQL, *setting); err != nil {
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
	}
	return row
}

// TestTenantScopedTablesHavePoliciesAndTenantLedKeys checks the catalog:
// every listed table exists, leads its primary key with tenant_id, has
// row-level security enabled and forced, and has the tenant isolation
// policy on kindgi.tenant_id for every command; no table of the schema is
// missing from the list; and no other policy allows a write.
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
			                   AND p.policyname = 'agent_tenant_isolation' AND p.cmd = 'ALL' AND p.permissive = 'PERMISSIVE'), '')
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
	// Any other policy may only widen reads (permissive policies are OR'ed):
	// no write to another tenant's rows can come from one.
	rows, _ = pool.Query(ctx, `SELECT tablename || '.' || policyname || ' ' || cmd FROM pg_policies
		WHERE schemaname = 'public' AND policyname <> 'agent_tenant_isolation' AND cmd <> 'SELECT'`)
	others, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(others) > 0 {
		t.Errorf("policies beyond tenant isolation that allow writes: %v", others)
	}
}
