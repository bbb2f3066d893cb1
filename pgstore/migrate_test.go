package pgstore

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// schemaDump describes a schema's tables, columns, indexes, constraints
// and policies as sorted lines, with the schema name removed.
func schemaDump(t *testing.T, pool *pgxpool.Pool, schema string) []string {
	t.Helper()
	rows, err := pool.Query(t.Context(), `
		SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || COALESCE(column_default, '')
		FROM information_schema.columns WHERE table_schema = $1
		UNION ALL
		SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = $1
		UNION ALL
		SELECT 'constraint ' || conrelid::regclass::text || ' ' || pg_get_constraintdef(oid)
		FROM pg_constraint WHERE connamespace = $1::regnamespace
		UNION ALL
		SELECT 'policy ' || tablename || ' ' || policyname || ' ' || COALESCE(qual, '') || ' ' || COALESCE(with_check, '')
		FROM pg_policies WHERE schemaname = $1
		UNION ALL
		SELECT 'rls ' || relname || ' ' || relrowsecurity || ' ' || relforcerowsecurity
		FROM pg_class WHERE relnamespace = $1::regnamespace AND relkind = 'r'
		UNION ALL
		SELECT 'version ' || version || ' ' || name FROM `+pgx.Identifier{schema, VersionTable}.Sanitize()+`
		ORDER BY 1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range lines {
		lines[i] = strings.ReplaceAll(l, schema+".", "")
	}
	return lines
}

// TestMigrateIsIdempotentAndConcurrentSafe migrates a fresh schema from
// eight goroutines at once, then again, and checks that every file ran once
// and the schema equals the one TestMain migrated.
func TestMigrateIsIdempotentAndConcurrentSafe(t *testing.T) {
	pool, schema := freshSchemaPool(t)
	ctx := t.Context()
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = Migrate(ctx, pool) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent Migrate %d: %v", i, err)
		}
	}
	first := schemaDump(t, pool, schema)
	if err := Migrate(ctx, pool); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	if d := cmp.Diff(first, schemaDump(t, pool, schema)); d != "" {
		t.Fatalf("schema changed by a second Migrate (-first +second):\n%s", d)
	}
	if d := cmp.Diff(schemaDump(t, testPool(t), "public"), first); d != "" {
		t.Fatalf("concurrently migrated schema differs from a serially migrated one (-serial +concurrent):\n%s", d)
	}
	migs, err := ListMigrations()
	if err != nil {
		t.Fatal(err)
	}
	var applied int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+VersionTable).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if applied != len(migs) {
		t.Fatalf("%d versions recorded, want %d", applied, len(migs))
	}
}

// TestMigrateInsideATransaction applies the migrations through a pgx.Tx and
// rolls it back: nothing remains.
func TestMigrateInsideATransaction(t *testing.T) {
	pool, schema := freshSchemaPool(t)
	ctx := t.Context()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := Migrate(ctx, tx); err != nil {
		t.Fatalf("Migrate in a transaction: %v", err)
	}
	var n int
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = $1", schema).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(TenantScopedTables)+1 {
		t.Fatalf("%d tables inside the transaction, want %d", n, len(TenantScopedTables)+1)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM pg_tables WHERE schemaname = $1", schema).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d tables after rollback, want 0", n)
	}
}

// TestMigrationFilesWorkWithOtherTools checks the conventions goose and
// golang-migrate rely on: NNNN_name.up.sql names with increasing numeric
// prefixes, and a "-- +goose Up" annotation opening each file.
func TestMigrationFilesWorkWithOtherTools(t *testing.T) {
	migs, err := ListMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(migs) == 0 {
		t.Fatal("no migrations embedded")
	}
	for i, m := range migs {
		if m.Version != int64(i+1) {
			t.Errorf("%s: version %d, want %d (no gaps)", m.Name, m.Version, i+1)
		}
		if !strings.HasPrefix(m.SQL, "-- +goose Up\n") {
			t.Errorf("%s: does not start with the goose Up annotation", m.Name)
		}
		if strings.Contains(m.SQL, "+goose Down") {
			t.Errorf("%s: has a Down section; golang-migrate would run it", m.Name)
		}
	}
}
