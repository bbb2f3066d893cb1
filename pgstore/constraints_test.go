package pgstore

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestCheaperConstraintsOverAnExistingDatabase migrates a fresh schema up
// to the migration before cheaper_constraints, stores journal entries and
// messages there, then migrates the rest: the stored rows read back the
// same, the tables were not rewritten, the journal's status and the
// message's role are checked by their domains (a value outside them is
// refused with check_violation, as the CHECK refused it), and a retried
// append reads the stored entry back through kindgi_append_steps.
func TestCheaperConstraintsOverAnExistingDatabase(t *testing.T) {
	pool, schema := freshSchemaPool(t)
	ctx := t.Context()
	migs, err := ListMigrations()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range migs {
		if strings.Contains(m.Name, "cheaper_constraints") {
			found = true
			break
		}
		if err := applyOne(ctx, pool, m); err != nil {
			t.Fatal(err)
		}
	}
	if !found {
		t.Fatal("no cheaper_constraints migration")
	}
	const seed = `
		INSERT INTO agent_runs (tenant_id, id, flow_id, flow_version, status, created_at, updated_at)
			VALUES ('t1', 'r1', 'f', '1', 'running', now(), now());
		INSERT INTO agent_run_journal (tenant_id, run_id, seq, key, phase, status, output, at) VALUES
			('t1', 'r1', 1, 'a', 'step', 'started', NULL, now()),
			('t1', 'r1', 2, 'a', 'done', 'completed', '{"v": 1, "doc": {"x": [1, 2]}}', now()),
			('t1', 'r1', 3, 'b', 'step', 'failed', NULL, now()),
			('t1', 'r1', 4, 'c', 'step', 'parked', NULL, now());
		UPDATE agent_runs SET last_seq = 4 WHERE tenant_id = 't1' AND id = 'r1';
		INSERT INTO agent_conversations (tenant_id, id, agent_id, agent_version, opened_at, last_activity_at, message_count)
			VALUES ('t1', 'c1', 'a', '1', now(), now(), 4);
		INSERT INTO agent_conversation_messages (tenant_id, conversation_id, id, seq, role, created_at) VALUES
			('t1', 'c1', 'm1', 1, 'user', now()), ('t1', 'c1', 'm2', 2, 'agent', now()),
			('t1', 'c1', 'm3', 3, 'tool', now()), ('t1', 'c1', 'm4', 4, 'system', now());`
	if _, err := pool.Exec(ctx, seed); err != nil {
		t.Fatal(err)
	}
	const readBack = `
		SELECT string_agg(seq || ' ' || key || ' ' || phase || ' ' || status || ' ' || COALESCE(output::text, '-'), '; ' ORDER BY seq)
		FROM agent_run_journal WHERE tenant_id = 't1' AND run_id = 'r1'
		UNION ALL
		SELECT string_agg(id || ' ' || role, '; ' ORDER BY seq) FROM agent_conversation_messages WHERE tenant_id = 't1'`
	read := func() []string {
		t.Helper()
		rows, err := pool.Query(ctx, readBack)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var got []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			got = append(got, s)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	filenodes := func() string {
		t.Helper()
		var s string
		if err := pool.QueryRow(ctx, `SELECT pg_relation_filenode('agent_run_journal') || ' ' || pg_relation_filenode('agent_conversation_messages')`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before, nodesBefore := read(), filenodes()

	if err := Migrate(ctx, pool); err != nil {
		t.Fatalf("Migrate over an existing database: %v", err)
	}
	if got := read(); strings.Join(got, "\n") != strings.Join(before, "\n") {
		t.Errorf("rows after the migration:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(before, "\n"))
	}
	if got := filenodes(); got != nodesBefore {
		t.Errorf("tables rewritten: filenodes %s, were %s", got, nodesBefore)
	}
	var types string
	if err := pool.QueryRow(ctx, `SELECT
			format_type((SELECT atttypid FROM pg_attribute WHERE attrelid = 'agent_run_journal'::regclass AND attname = 'status'), NULL)
			|| ' ' || format_type((SELECT atttypid FROM pg_attribute WHERE attrelid = 'agent_conversation_messages'::regclass AND attname = 'role'), NULL)
			|| ' ' || (SELECT count(*) FROM pg_constraint WHERE contype = 'c'
			           AND conrelid IN ('agent_run_journal'::regclass, 'agent_conversation_messages'::regclass))`).Scan(&types); err != nil {
		t.Fatal(err)
	}
	if want := "kindgi_journal_status kindgi_message_role 0"; types != want {
		t.Errorf("types and table CHECKs %q, want %q (schema %s)", types, want, schema)
	}

	for _, bad := range []string{
		`INSERT INTO agent_run_journal (tenant_id, run_id, seq, key, phase, status, at) VALUES ('t1', 'r1', 5, 'd', 'step', 'done', now())`,
		`UPDATE agent_run_journal SET status = 'Started' WHERE tenant_id = 't1' AND run_id = 'r1' AND seq = 1`,
		`INSERT INTO agent_conversation_messages (tenant_id, conversation_id, id, seq, role, created_at) VALUES ('t1', 'c1', 'm5', 5, 'assistant', now())`,
		`UPDATE agent_conversation_messages SET role = '' WHERE tenant_id = 't1' AND id = 'm1'`,
	} {
		_, err := pool.Exec(ctx, bad)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23514" {
			t.Errorf("%s: err %v, want check_violation (23514)", bad, err)
		}
	}

	// A retry of stored entries: kindgi_append_steps returns each stored
	// entry, its status as text.
	var statuses string
	if err := pool.QueryRow(ctx, `SELECT string_agg(o_status, ',' ORDER BY o_ord) FROM kindgi_append_steps('t1', 'r1', '', now(),
			ARRAY['a', 'b'], ARRAY['done', 'step'], ARRAY['', ''], ARRAY['completed', 'failed'],
			ARRAY[NULL, NULL]::text[], ARRAY[NULL, NULL]::text[], ARRAY[now(), now()], NULL) WHERE o_ord > 0`).Scan(&statuses); err != nil {
		t.Fatal(err)
	}
	if statuses != "completed,failed" {
		t.Errorf("stored entries' statuses %q, want completed,failed", statuses)
	}
}
