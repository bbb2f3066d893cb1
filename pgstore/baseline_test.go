package pgstore

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/kindgi/agents/bindings"
)

// legacyMigrationsArchive holds the thirteen files the baseline replaced
// (as they were at 21e8efa), kept only so that
// TestBaselineEqualsLegacySchema can apply them.
const legacyMigrationsArchive = "testdata/legacy-migrations.tar.gz"

// legacyMigrations reads the files the baseline replaced, in order.
func legacyMigrations(t *testing.T) []Migration {
	t.Helper()
	f, err := os.Open(legacyMigrationsArchive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var out []Migration
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg || !strings.HasSuffix(h.Name, ".up.sql") {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Migration{Name: path.Base(h.Name), SQL: string(b)})
	}
	slices.SortFunc(out, func(a, b Migration) int { return strings.Compare(a.Name, b.Name) })
	for i := range out {
		out[i].Version = int64(i + 1)
	}
	if len(out) != len(legacyNames) {
		t.Fatalf("%d legacy migrations, want %d", len(out), len(legacyNames))
	}
	for i, m := range out {
		if m.Name != legacyNames[i] {
			t.Fatalf("legacy migration %d is %s, want %s", i+1, m.Name, legacyNames[i])
		}
	}
	return out
}

// schemaOnlyDump is pg_dump --schema-only of one schema of the test
// database, with the schema's name replaced by SCHEMA and the lines that
// differ from one dump to the next (pg_dump's \restrict keys) removed.
func schemaOnlyDump(t *testing.T, schema string) string {
	t.Helper()
	if _, err := exec.LookPath("pg_dump"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("pg_dump is not installed (CI installs postgresql)")
		}
		t.Skip("pg_dump is not installed")
	}
	cfg := testEnv.config.ConnConfig
	cmd := exec.CommandContext(t.Context(), "pg_dump", "--schema-only", "--no-owner", "-n", schema, "-d", testEnv.name)
	cmd.Env = append(os.Environ(), "PGHOST="+cfg.Host, "PGPORT="+strconv.Itoa(int(cfg.Port)), "PGUSER="+cfg.User, "PGPASSWORD="+cfg.Password)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pg_dump -n %s: %v", schema, err)
	}
	restrict := regexp.MustCompile(`(?m)^\\(un)?restrict .*\n`)
	s := restrict.ReplaceAllString(string(out), "")
	return regexp.MustCompile(`\b`+regexp.QuoteMeta(schema)+`\b`).ReplaceAllString(s, "SCHEMA")
}

// TestBaselineEqualsLegacySchema migrates one schema with the thirteen
// files the baseline replaced and then Migrate (which upgrades it with
// migrations/legacy/upgrade.sql), and another with Migrate alone (the
// baseline): pg_dump --schema-only prints the same schema for both, the
// legacy one records the baseline, and a store works over it.
func TestBaselineEqualsLegacySchema(t *testing.T) {
	ctx := t.Context()
	legacyPool, legacySchema := freshSchemaPool(t)
	for _, m := range legacyMigrations(t) {
		if err := applyOne(ctx, legacyPool, m); err != nil {
			t.Fatalf("legacy %s: %v", m.Name, err)
		}
	}
	basePool, baseSchema := freshSchemaPool(t)
	if err := Migrate(ctx, basePool); err != nil {
		t.Fatal(err)
	}

	versions := func() []string {
		t.Helper()
		rows, err := legacyPool.Query(ctx, `SELECT version || ' ' || name FROM `+VersionTable+` ORDER BY version`)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := versions(); len(got) != 13 || got[0] != "1 0001_agents.up.sql" {
		t.Fatalf("legacy versions %v, want the thirteen files'", got)
	}
	// Migrate over the legacy schema brings it to the baseline: the same
	// dump, version 1 recorded as the baseline and the legacy versions
	// forgotten; again, it changes nothing.
	for range 2 {
		if err := Migrate(ctx, legacyPool); err != nil {
			t.Fatalf("Migrate over the legacy schema: %v", err)
		}
		if d := cmp.Diff([]string{"1 0001_baseline.up.sql"}, versions()); d != "" {
			t.Errorf("versions after Migrate over the legacy schema (-want +got):\n%s", d)
		}
		if d := cmp.Diff(schemaOnlyDump(t, baseSchema), schemaOnlyDump(t, legacySchema)); d != "" {
			t.Fatalf("pg_dump --schema-only of the baseline (-) and the legacy schema after Migrate (+) differ:\n%s", d)
		}
	}
	// The store works over it: a run started, journaled and read back.
	store := New(legacyPool, nil)
	if _, err := store.StartRun(ctx, bindings.StartRunInput{TenantID: "t1", RunID: "r1", FlowID: "f", FlowVersion: "1", Owner: "w", LeaseTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.AppendStep(ctx, bindings.AppendStepInput{TenantID: "t1", RunID: "r1", Owner: "w", Entry: bindings.JournalEntry{Key: "setup", Status: bindings.StepCompleted, Output: []byte(`{"ok":true}`)}}); err != nil {
		t.Fatal(err)
	}
	entries, err := store.ReadJournal(ctx, "t1", "r1")
	if err != nil || len(entries) != 1 || string(entries[0].Output) != `{"ok":true}` {
		t.Fatalf("journal over the legacy schema: %+v, %v", entries, err)
	}
}
