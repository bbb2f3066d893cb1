package pgstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// migrateUpTo applies the embedded migrations before the one whose name
// contains name, and returns that one and those after it.
func migrateUpTo(t *testing.T, db DB, name string) []Migration {
	t.Helper()
	migs, err := ListMigrations()
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range migs {
		if strings.Contains(m.Name, name) {
			return migs[i:]
		}
		if err := applyOne(t.Context(), db, m); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("no %s migration", name)
	return nil
}

// TestCheaperStatusOverAnExistingDatabase migrates a fresh schema up to
// the migration before cheaper_status, stores runs of every status and
// conversations of both, then migrates the rest: the rows read back the
// same, the tables and their indexes without a predicate were not
// rewritten, the status columns are checked by their domains (a value
// outside them is refused with check_violation, as the CHECKs refused
// it), the row-level security policies that read status (also an
// operator's own on another table) are the same policies with the same
// expressions (the column read through a cast to text), the file may be applied again, and the run trigger notifies a
// status change and a released lease, not an update that only moves
// last_seq.
func TestCheaperStatusOverAnExistingDatabase(t *testing.T) {
	pool, schema := freshSchemaPool(t)
	ctx := t.Context()
	rest := migrateUpTo(t, pool, "cheaper_status")
	const seed = `
		INSERT INTO agent_runs (tenant_id, id, flow_id, flow_version, status, lease_owner, created_at, updated_at) VALUES
			('t1', 'r1', 'f', '1', 'queued', '', now(), now()), ('t1', 'r2', 'f', '1', 'running', 'w', now(), now()),
			('t1', 'r3', 'f', '1', 'suspended', '', now(), now()), ('t1', 'r4', 'f', '1', 'completed', '', now(), now()),
			('t1', 'r5', 'f', '1', 'failed', '', now(), now());
		INSERT INTO agent_conversations (tenant_id, id, agent_id, agent_version, status, opened_at, last_activity_at) VALUES
			('t1', 'c1', 'a', '1', 'open', now(), now()), ('t1', 'c2', 'a', '1', 'closed', now(), now());`
	if _, err := pool.Exec(ctx, seed); err != nil {
		t.Fatal(err)
	}
	// An operator's own policy on another table that reads a run's status.
	if _, err := pool.Exec(ctx, `CREATE POLICY operator_parked ON agent_approvals FOR SELECT
		USING (EXISTS (SELECT 1 FROM agent_runs r WHERE r.tenant_id = agent_approvals.tenant_id AND r.id = agent_approvals.run_id
		               AND r.status = 'suspended'))`); err != nil {
		t.Fatal(err)
	}
	query := func(sql string) []string {
		t.Helper()
		rows, _ := pool.Query(ctx, sql)
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return got
	}
	const readBack = `
		SELECT id || ' ' || status FROM agent_runs
		UNION ALL SELECT id || ' ' || status FROM agent_conversations ORDER BY 1`
	// The tables and their indexes but the three partial ones whose
	// predicate reads status, which ALTER COLUMN TYPE rebuilds.
	const filenodes = `SELECT string_agg(c.relname || ' ' || pg_relation_filenode(c.oid), ', ' ORDER BY c.relname)
		FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace
		  AND (c.relname IN ('agent_runs', 'agent_conversations') OR c.oid IN (SELECT indexrelid FROM pg_index
		       WHERE indrelid IN ('agent_runs'::regclass, 'agent_conversations'::regclass) AND indpred IS NULL))`
	const policies = `SELECT tablename || '.' || policyname || ' ' || permissive || ' ' || cmd || ' ' || roles::text
			|| ' USING ' || COALESCE(qual, '') || ' CHECK ' || COALESCE(with_check, '')
		FROM pg_policies WHERE schemaname = current_schema() ORDER BY 1`
	before, nodesBefore, policiesBefore := query(readBack), query(filenodes), query(policies)
	if !strings.Contains(strings.Join(policiesBefore, "\n"), "status IN") && !strings.Contains(strings.Join(policiesBefore, "\n"), "(status = ") {
		t.Fatalf("no policy reads status before the migration:\n%s", strings.Join(policiesBefore, "\n"))
	}

	if err := Migrate(ctx, pool); err != nil {
		t.Fatalf("Migrate over an existing database: %v", err)
	}
	check := func(when string) {
		t.Helper()
		if got := query(readBack); strings.Join(got, "\n") != strings.Join(before, "\n") {
			t.Errorf("%s: rows\n%s\nwant\n%s", when, strings.Join(got, "\n"), strings.Join(before, "\n"))
		}
		if got := query(filenodes); got[0] != nodesBefore[0] {
			t.Errorf("%s: tables rewritten: filenodes %s, were %s", when, got[0], nodesBefore[0])
		}
		// The same policies; only the status column's reads gain the cast.
		want := make([]string, len(policiesBefore))
		for i, p := range policiesBefore {
			if strings.HasPrefix(p, "agent_approvals.operator_parked ") {
				want[i] = strings.ReplaceAll(p, "(r.status = ", "((r.status)::text = ")
				continue
			}
			if !strings.HasPrefix(p, "agent_runs.") && !strings.HasPrefix(p, "agent_conversations.") {
				want[i] = p
				continue
			}
			p = strings.ReplaceAll(p, "(status = ", "((status)::text = ")
			p = strings.ReplaceAll(p, "(status <> ", "((status)::text <> ")
			want[i] = strings.ReplaceAll(p, "(status = ANY ", "((status)::text = ANY ")
		}
		if got := query(policies); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: policies\n%s\nwant\n%s", when, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		types := query(`SELECT format_type(atttypid, NULL) FROM pg_attribute
			WHERE attrelid IN ('agent_runs'::regclass, 'agent_conversations'::regclass) AND attname = 'status'
			UNION ALL SELECT count(*)::text FROM pg_constraint WHERE contype = 'c'
			  AND conrelid IN ('agent_runs'::regclass, 'agent_conversations'::regclass)
			ORDER BY 1`)
		if got, want := strings.Join(types, " "), "0 kindgi_conversation_status kindgi_run_status"; got != want {
			t.Errorf("%s: status types and table CHECKs %q, want %q (schema %s)", when, got, want, schema)
		}
	}
	check("migrated")
	// Every statement of the file may be repeated.
	if _, err := pool.Exec(ctx, rest[0].SQL, pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatalf("%s again: %v", rest[0].Name, err)
	}
	check("applied again")

	for _, bad := range []string{
		`INSERT INTO agent_runs (tenant_id, id, flow_id, flow_version, status, created_at, updated_at) VALUES ('t1', 'r6', 'f', '1', 'done', now(), now())`,
		`UPDATE agent_runs SET status = 'Running' WHERE tenant_id = 't1' AND id = 'r1'`,
		`UPDATE agent_runs SET status = NULL WHERE tenant_id = 't1' AND id = 'r1'`,
		`INSERT INTO agent_conversations (tenant_id, id, agent_id, agent_version, status, opened_at, last_activity_at) VALUES ('t1', 'c3', 'a', '1', 'archived', now(), now())`,
		`UPDATE agent_conversations SET status = '' WHERE tenant_id = 't1' AND id = 'c1'`,
	} {
		_, err := pool.Exec(ctx, bad)
		var pgErr *pgconn.PgError
		want := "23514"
		if strings.Contains(bad, "NULL") {
			want = "23502" // not_null_violation, as before
		}
		if !errors.As(err, &pgErr) || pgErr.Code != want {
			t.Errorf("%s: err %v, want SQLSTATE %s", bad, err, want)
		}
	}
	// A conversation's default status is still 'open'.
	if _, err := pool.Exec(ctx, `INSERT INTO agent_conversations (tenant_id, id, agent_id, agent_version, opened_at, last_activity_at)
		VALUES ('t1', 'c4', 'a', '1', now(), now())`); err != nil {
		t.Fatal(err)
	}
	if got := query(`SELECT status FROM agent_conversations WHERE id = 'c4'`); len(got) != 1 || got[0] != "open" {
		t.Errorf("default status %q, want open", got)
	}

	// The run trigger: a status change and a released lease notify, an
	// update of last_seq alone does not.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN kindgi_runs"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ update, want string }{
		{`UPDATE agent_runs SET last_seq = last_seq + 3 WHERE tenant_id = 't1' AND id = 'r2'`, ""},
		{`UPDATE agent_runs SET status = 'running' WHERE tenant_id = 't1' AND id = 'r2'`, ""},
		{`UPDATE agent_runs SET status = 'suspended', last_seq = last_seq + 1 WHERE tenant_id = 't1' AND id = 'r2'`, "t1\tr2\tsuspended\t"},
		{`UPDATE agent_runs SET lease_owner = 'w' WHERE tenant_id = 't1' AND id = 'r1'`, ""},
		{`UPDATE agent_runs SET lease_owner = '' WHERE tenant_id = 't1' AND id = 'r1'`, "t1\tr1\tqueued\tclaimable"},
	} {
		if _, err := conn.Exec(ctx, c.update); err != nil {
			t.Fatalf("%s: %v", c.update, err)
		}
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		n, err := conn.Conn().WaitForNotification(wctx)
		cancel()
		got := ""
		if err == nil {
			got = n.Payload
		} else if ctx.Err() != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s: notified %q, want %q", c.update, got, c.want)
		}
	}
}

// TestExpectMessagesLooksUpByPrimaryKey checks with auto_explain that
// kindgi_expect_messages finds a stored message id through the primary
// key, in the plan it caches after its first executions, on tables never
// analyzed (a fresh deployment's): the conversation's other messages are
// not read, however many it holds. Skipped where auto_explain cannot be
// loaded.
func TestExpectMessagesLooksUpByPrimaryKey(t *testing.T) {
	_, schema := freshSchemaPool(t)
	ctx := t.Context()
	cfg := testEnv.config.ConnConfig.Copy()
	cfg.RuntimeParams["search_path"] = schema
	var plans []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		if strings.Contains(n.Message, "agent_conversation_messages m") {
			plans = append(plans, n.Message)
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := Migrate(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `
		INSERT INTO agent_conversations (tenant_id, id, agent_id, agent_version, opened_at, last_activity_at, message_count)
			VALUES ('t1', 'c1', 'a', '1', now(), now(), 500);
		INSERT INTO agent_conversation_messages (tenant_id, conversation_id, id, seq, role, created_at)
			SELECT 't1', 'c1', 'm' || g, g, 'user', now() FROM generate_series(1, 500) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "LOAD 'auto_explain'"); err != nil {
		t.Skipf("auto_explain: %v", err)
	}
	if _, err := conn.Exec(ctx, `SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on;
		SET auto_explain.log_level = notice; SET client_min_messages = notice`); err != nil {
		t.Fatal(err)
	}
	// Past the plan cache's first five custom plans: the generic plan.
	for i := range 8 {
		if _, err := conn.Exec(ctx, "SELECT kindgi_expect_messages('t1', 'c1', 500, $1)", "new-"+string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	_, err = conn.Exec(ctx, "SELECT kindgi_expect_messages('t1', 'c1', 500, 'm250')")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != codeConversationChanged {
		t.Errorf("a stored id: err %v, want SQLSTATE %s", err, codeConversationChanged)
	}
	if len(plans) != 9 {
		t.Fatalf("%d plans of the message lookup logged, want 9:\n%s", len(plans), strings.Join(plans, "\n"))
	}
	for i, p := range plans {
		if !strings.Contains(p, "using agent_conversation_messages_pkey") || strings.Contains(p, "Filter") {
			t.Errorf("execution %d: the lookup does not go by the primary key alone:\n%s", i+1, p)
		}
	}
}
