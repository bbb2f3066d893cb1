package pgstore

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// sweeperRole is the role the baseline migration gates the sweep policies on.
const sweeperRole = "kindgi_sweeper"

// grantSweeper makes role a member of kindgi_sweeper, as an operator does
// for the workers that run the approval sweep.
func grantSweeper(t *testing.T, role string) {
	t.Helper()
	if _, err := testPool(t).Exec(t.Context(), "GRANT "+sweeperRole+" TO "+role); err != nil {
		t.Fatalf("grant %s to %s: %v", sweeperRole, role, err)
	}
}

// sweepPolicies are the policies the baseline migration adds when
// kindgi_sweeper exists (expired approvals, idle conversations), as
// policiesBeyondTenantIsolation describes them. The status of runs and
// conversations is a domain over text, so those policies read it through
// a cast to text.
var sweepPolicies = []string{
	"agent_approvals.agent_expiry_sweep PERMISSIVE SELECT TO {kindgi_sweeper} USING ((current_setting('kindgi.sweep'::text, true) = 'expired-approvals'::text) AND (status = 'pending'::text) AND (expires_at IS NOT NULL)) CHECK ",
	"agent_conversations.agent_idle_sweep PERMISSIVE SELECT TO {kindgi_sweeper} USING ((current_setting('kindgi.sweep'::text, true) = 'inactive-conversations'::text) AND ((status)::text = 'open'::text)) CHECK ",
	"agent_runs.agent_expiry_sweep PERMISSIVE SELECT TO {kindgi_sweeper} USING ((current_setting('kindgi.sweep'::text, true) = 'expired-approvals'::text) AND ((status)::text = 'suspended'::text)) CHECK ",
}

// policiesBeyondTenantIsolation describes, one line each in name order,
// the policies of schema other than agent_tenant_isolation: table, name,
// kind, command, roles, expressions.
func policiesBeyondTenantIsolation(t *testing.T, pool *pgxpool.Pool, schema string) []string {
	t.Helper()
	rows, _ := pool.Query(t.Context(), `SELECT tablename || '.' || policyname || ' ' || permissive || ' ' || cmd
		|| ' TO ' || roles::text || ' USING ' || COALESCE(qual, '') || ' CHECK ' || COALESCE(with_check, '')
		FROM pg_policies WHERE schemaname = $1 AND policyname <> 'agent_tenant_isolation' ORDER BY 1`, schema)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestSweepPoliciesNeedTheSweeperRole migrates, as a role that may not
// create roles, two fresh schemas it owns: with the baseline migration naming a
// sweeper role that does not exist, the migration succeeds and creates no
// sweep policy (so nothing widens any read); with the real kindgi_sweeper,
// which exists, it creates the two read-only policies for that role.
func TestSweepPoliciesNeedTheSweeperRole(t *testing.T) {
	admin := testPool(t)
	ctx := t.Context()
	suffix := suffix8()
	owner, password := "kindgi_owner_"+suffix, randomID()
	missing := "kindgi_sweeper_missing_" + suffix
	for _, q := range []string{
		"CREATE ROLE " + owner + " LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE PASSWORD '" + password + "'",
		"GRANT CONNECT ON DATABASE " + testEnv.name + " TO " + owner,
		"CREATE SCHEMA s_nosweeper_" + suffix + " AUTHORIZATION " + owner,
		"CREATE SCHEMA s_sweeper_" + suffix + " AUTHORIZATION " + owner,
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		for _, q := range []string{"DROP SCHEMA s_nosweeper_" + suffix + " CASCADE", "DROP SCHEMA s_sweeper_" + suffix + " CASCADE",
			"DROP OWNED BY " + owner, "DROP ROLE " + owner} {
			if _, err := admin.Exec(context.Background(), q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	connect := func(schema string) *pgxpool.Pool {
		cfg := testEnv.config.Copy()
		cfg.ConnConfig.User, cfg.ConnConfig.Password = owner, password
		cfg.ConnConfig.RuntimeParams["search_path"] = schema
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return pool
	}

	// The files as shipped, with 0003's role renamed to one that does not
	// exist and that the owner may not create.
	migs, err := ListMigrations()
	if err != nil {
		t.Fatal(err)
	}
	var renamed int
	noSweeper := connect("s_nosweeper_" + suffix)
	for _, m := range migs {
		if strings.Contains(m.SQL, sweeperRole) {
			renamed++
			m.SQL = strings.ReplaceAll(m.SQL, sweeperRole, missing)
		}
		if _, err := noSweeper.Exec(ctx, m.SQL, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("%s as a role without CREATEROLE, its sweeper role missing: %v", m.Name, err)
		}
	}
	if renamed == 0 {
		t.Fatalf("no migration names %s", sweeperRole)
	}
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, missing).Scan(&exists); err != nil || exists {
		t.Fatalf("role %s exists=%v (%v), want it never created", missing, exists, err)
	}
	if got := policiesBeyondTenantIsolation(t, admin, "s_nosweeper_"+suffix); len(got) != 0 {
		t.Errorf("without a sweeper role the migrations created %v, want no policy beyond tenant isolation", got)
	}

	// kindgi_sweeper exists (TestMain's Migrate made it): the same role
	// migrates with Migrate and gets the sweep policies.
	if err := Migrate(ctx, connect("s_sweeper_"+suffix)); err != nil {
		t.Fatalf("Migrate as a role without CREATEROLE: %v", err)
	}
	if d := cmp.Diff(sweepPolicies, policiesBeyondTenantIsolation(t, admin, "s_sweeper_"+suffix)); d != "" {
		t.Errorf("sweep policies with %s existing (-want +got):\n%s", sweeperRole, d)
	}
}

// TestSweeperRoleCreatedByRacingMigrations applies the baseline migration (with
// its role renamed to a fresh one) to two schemas from two transactions
// that race to create the role, as migrations of two fresh databases of
// one cluster do: the second blocks on the first's uncommitted role, gets
// a unique violation when it commits, and goes on; both schemas get the
// sweep policies for the one role.
func TestSweeperRoleCreatedByRacingMigrations(t *testing.T) {
	admin := testPool(t)
	ctx := t.Context()
	suffix := suffix8()
	role := "kindgi_sweeper_race_" + suffix
	schemas := []string{"s_race1_" + suffix, "s_race2_" + suffix}
	t.Cleanup(func() {
		for _, q := range []string{"DROP SCHEMA IF EXISTS " + schemas[0] + " CASCADE", "DROP SCHEMA IF EXISTS " + schemas[1] + " CASCADE", "DROP ROLE IF EXISTS " + role} {
			if _, err := admin.Exec(context.Background(), q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	migs, err := ListMigrations()
	if err != nil {
		t.Fatal(err)
	}
	// The migration that creates the role races; those before it are
	// applied first, those after it (which only name the role) once both
	// have committed, all with the role renamed.
	k := slices.IndexFunc(migs, func(m Migration) bool { return strings.Contains(m.SQL, "CREATE ROLE "+sweeperRole) })
	if k < 0 {
		t.Fatalf("no migration creates %s", sweeperRole)
	}
	sweepSQL := strings.ReplaceAll(migs[k].SQL, sweeperRole, role)
	txs := make([]pgx.Tx, len(schemas))
	pools := make([]*pgxpool.Pool, len(schemas))
	for i, schema := range schemas {
		if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
			t.Fatal(err)
		}
		pool := poolOnSchema(t, schema)
		t.Cleanup(pool.Close)
		pools[i] = pool
		for _, m := range migs[:k] {
			if _, err := pool.Exec(ctx, m.SQL, pgx.QueryExecModeSimpleProtocol); err != nil {
				t.Fatalf("%s in %s: %v", m.Name, schema, err)
			}
		}
		if txs[i], err = pool.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = txs[i].Rollback(context.Background()) }()
	}
	// The first creates the role and holds it uncommitted.
	if _, err := txs[0].Exec(ctx, sweepSQL, pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatalf("first migration: %v", err)
	}
	var pid uint32
	if err := txs[1].QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() {
		_, err := txs[1].Exec(ctx, sweepSQL, pgx.QueryExecModeSimpleProtocol)
		second <- err
	}()
	// Wait until the second waits on the first's lock, then commit the first.
	for waiting := false; !waiting; {
		if err := admin.QueryRow(ctx, "SELECT COALESCE(wait_event_type = 'Lock', false) FROM pg_stat_activity WHERE pid = $1", pid).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-second:
			t.Fatalf("the second migration finished before the first committed: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := txs[0].Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatalf("second migration, racing for the role: %v", err)
	}
	if err := txs[1].Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for i, pool := range pools {
		for _, m := range migs[k+1:] {
			if _, err := pool.Exec(ctx, strings.ReplaceAll(m.SQL, sweeperRole, role), pgx.QueryExecModeSimpleProtocol); err != nil {
				t.Fatalf("%s in %s: %v", m.Name, schemas[i], err)
			}
		}
	}
	want := make([]string, len(sweepPolicies))
	for i, p := range sweepPolicies {
		want[i] = strings.ReplaceAll(p, sweeperRole, role)
	}
	for _, schema := range schemas {
		if d := cmp.Diff(want, policiesBeyondTenantIsolation(t, admin, schema)); d != "" {
			t.Errorf("%s: sweep policies (-want +got):\n%s", schema, d)
		}
	}
}
