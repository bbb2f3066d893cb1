package pgstore

import (
	"context"
	"embed"
	"errors"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	agents "github.com/kindgi/agents"
)

// Migrations holds the schema as plain SQL files under "migrations/", named
// NNNN_name.up.sql and applied in name order. Today there is one, the
// baseline 0001_baseline.up.sql. A database the thirteen files it replaced
// before the first release migrated (version 1 recorded as
// 0001_agents.up.sql) is brought to the baseline by
// migrations/legacy/upgrade.sql instead, once; a test holds the two
// schemas equal with pg_dump. Later changes come as files 0002 and on.
//
// Migrate applies them. They also work with other tools (use one tool per
// database: each keeps its own version table):
//
//   - goose: every file starts with "-- +goose Up", so
//     `goose -dir pgstore/migrations postgres "$DATABASE_URL" up` runs them, or
//     from Go goose.SetBaseFS(pgstore.Migrations) and goose.Up(db, "migrations").
//   - golang-migrate: the names follow its NNNN_name.up.sql convention, so
//     `migrate -source file://pgstore/migrations -database "$DATABASE_URL" up`
//     runs them, or from Go iofs.New(pgstore.Migrations, "migrations").
//
// There are no down migrations.
//
//go:embed migrations/*.sql
var Migrations embed.FS

// legacyUpgrade brings a database the legacy files migrated to the
// baseline (see migrations/legacy/upgrade.sql).
//
//go:embed migrations/legacy/upgrade.sql
var legacyUpgrade string

// legacyNames are the files the baseline replaced, by version: a database
// whose version table records version 1 under legacyNames[0] was migrated
// by them.
var legacyNames = []string{
	"0001_agents.up.sql", "0002_row_level_security.up.sql", "0003_retention.up.sql", "0004_workers.up.sql",
	"0005_compliance_and_auto_close.up.sql", "0006_worker_approvals.up.sql", "0007_batched_journal.up.sql",
	"0008_message_step.up.sql", "0009_cheaper_writes.up.sql", "0010_cheaper_constraints.up.sql",
	"0011_optimistic_open.up.sql", "0012_optimistic_resume.up.sql", "0013_cheaper_status.up.sql",
}

// TenantScopedTables names every table of the schema. Each has tenant_id as
// the first column of its primary key and a row-level security policy bound
// to the transaction-local setting kindgi.tenant_id.
var TenantScopedTables = []string{
	"agent_conversations",
	"agent_conversation_messages",
	"agent_run_snapshots",
	"agent_runs",
	"agent_run_journal",
	"agent_memory_facts",
	"agent_approvals",
	"agent_compliance_records",
	"agent_quotas",
	"agent_quota_units",
}

// VersionTable is the table in which Migrate records applied migrations.
const VersionTable = "kindgi_agents_schema_migrations"

// migrateLockKey is the advisory lock Migrate holds while it applies a
// file: the first 8 bytes of "kindgi-agents-migrate" read as an int64.
const migrateLockKey int64 = 0x6b696e6467692d61

// Migration is one embedded migration file.
type Migration struct {
	// Version is the file's numeric prefix.
	Version int64
	// Name is the file name.
	Name string
	// SQL is the file's text.
	SQL string
}

// ListMigrations returns the embedded migrations in the order Migrate
// applies them.
func ListMigrations() ([]Migration, error) {
	entries, err := fs.ReadDir(Migrations, "migrations")
	if err != nil {
		return nil, &agents.PersistenceError{Op: "list migrations", Err: err, Permanent: true}
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".up.sql") {
			continue
		}
		prefix, _, ok := strings.Cut(name, "_")
		if !ok {
			return nil, &agents.PersistenceError{Op: "list migrations", Err: errors.New("migration " + name + " has no NNNN_ prefix"), Permanent: true}
		}
		v, err := strconv.ParseInt(prefix, 10, 64)
		if err != nil {
			return nil, &agents.PersistenceError{Op: "list migrations", Err: errors.New("migration " + name + " has no numeric prefix"), Permanent: true}
		}
		b, err := fs.ReadFile(Migrations, path.Join("migrations", name))
		if err != nil {
			return nil, &agents.PersistenceError{Op: "list migrations", Err: err, Permanent: true}
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, &agents.PersistenceError{Op: "list migrations", Err: errors.New("two migrations share version " + strconv.FormatInt(out[i].Version, 10)), Permanent: true}
		}
	}
	return out, nil
}

// Migrate applies the embedded migrations that db has not applied yet, in
// order, each in its own transaction together with its row in VersionTable.
// Every transaction first takes a transaction-scoped advisory lock, so
// concurrent Migrate calls (from several processes) serialise and each file
// runs once; calling Migrate again is a no-op. Tables are created in the
// first schema of the connection's search_path. db may be a pool or a
// transaction (then each file runs in a savepoint).
func Migrate(ctx context.Context, db DB) error {
	migs, err := ListMigrations()
	if err != nil {
		return err
	}
	for _, m := range migs {
		if err := applyOne(ctx, db, m); err != nil {
			return err
		}
	}
	return nil
}

func applyOne(ctx context.Context, db DB, m Migration) (err error) {
	op := "migrate " + m.Name
	tx, err := db.Begin(ctx)
	if err != nil {
		return persistErr(ctx, op, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLockKey); err != nil {
		return persistErr(ctx, op, err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+VersionTable+` (
		version    bigint      PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return persistErr(ctx, op, err)
	}
	var name string
	err = tx.QueryRow(ctx, `SELECT name FROM `+VersionTable+` WHERE version = $1`, m.Version).Scan(&name)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return persistErr(ctx, op, err)
	default:
		if m.Version == 1 && name == legacyNames[0] && m.Name != name {
			if err := upgradeLegacy(ctx, tx, m); err != nil {
				return persistErr(ctx, op, err)
			}
		}
		if err := tx.Commit(ctx); err != nil {
			return persistErr(ctx, op, err)
		}
		return nil
	}
	// The simple protocol runs a file of several statements in one call.
	if _, err := tx.Exec(ctx, m.SQL, pgx.QueryExecModeSimpleProtocol); err != nil {
		return persistErr(ctx, op, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+VersionTable+` (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
		return persistErr(ctx, op, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return persistErr(ctx, op, err)
	}
	return nil
}

// upgradeLegacy brings a database the legacy files migrated to the
// baseline m, in tx: it runs legacyUpgrade, records version 1 as m, and
// forgets the legacy versions after 1 (so that migrations 0002 and on,
// when they come, are applied to it as to any other database).
func upgradeLegacy(ctx context.Context, tx pgx.Tx, m Migration) error {
	if _, err := tx.Exec(ctx, legacyUpgrade, pgx.QueryExecModeSimpleProtocol); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE `+VersionTable+` SET name = $1, applied_at = now() WHERE version = 1`, m.Name); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DELETE FROM `+VersionTable+` WHERE version > 1 AND name = ANY($1)`, legacyNames[1:])
	return err
}
