package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// testDatabaseEnv names the PostgreSQL the tests use. Tests skip only when
// it is unset; CI always sets it.
const testDatabaseEnv = "KINDGI_TEST_DATABASE_URL"

// testEnv is the database of this test binary: a fresh database created in
// TestMain and dropped after the tests, so packages testing in parallel
// never share tables.
var testEnv struct {
	adminURL string // KINDGI_TEST_DATABASE_URL
	name     string // the fresh database
	config   *pgxpool.Config
	pool     *pgxpool.Pool
	err      error
}

func TestMain(m *testing.M) {
	if mode := os.Getenv(racingHelperEnv); mode != "" {
		os.Exit(racingHelper(mode)) // a helper process of the racing resumers
	}
	code := func() int {
		url := os.Getenv(testDatabaseEnv)
		if url == "" {
			return m.Run()
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		testEnv.adminURL = url
		if err := setupTestDatabase(ctx, url); err != nil {
			testEnv.err = err
			return m.Run()
		}
		defer teardownTestDatabase()
		return m.Run()
	}()
	os.Exit(code)
}

func setupTestDatabase(ctx context.Context, url string) error {
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", testDatabaseEnv, err)
	}
	defer admin.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	testEnv.name = "kindgi_pgstore_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+testEnv.name); err != nil {
		return fmt.Errorf("create test database: %w", err)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return err
	}
	cfg.ConnConfig.Database = testEnv.name
	cfg.MaxConns = 20
	testEnv.config = cfg
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	testEnv.pool = pool
	return Migrate(ctx, pool)
}

func teardownTestDatabase() {
	if testEnv.pool != nil {
		testEnv.pool.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, testEnv.adminURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, "drop test database:", err)
		return
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+testEnv.name+" WITH (FORCE)"); err != nil {
		fmt.Fprintln(os.Stderr, "drop test database:", err)
	}
}

// testPool returns the migrated pool of the test database, skipping the
// test when KINDGI_TEST_DATABASE_URL is unset and failing it when the
// database could not be set up.
func testPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	if testEnv.adminURL == "" {
		t.Skip(testDatabaseEnv + " is not set")
	}
	if testEnv.err != nil {
		t.Fatal(testEnv.err)
	}
	return testEnv.pool
}

func newPool(cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	return pgxpool.NewWithConfig(context.Background(), cfg)
}

// workerTestPool is a migrated pool of a schema of the test's own, for a
// test whose workers claim every claimable run of their tenant: runs other
// tests left in the shared database (queued, or with a lapsed lease) are
// not there to be claimed, and driven with this test's scripted provider.
func workerTestPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, _ := freshSchemaPool(t)
	if err := Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	return pool
}

// suffix8 is eight random hex digits: a suffix that makes a test's
// tenant, role or schema name its own.
func suffix8() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// poolOnSchema opens a pool of the test database whose search_path is
// schema; the caller closes it.
func poolOnSchema(t testing.TB, schema string) *pgxpool.Pool {
	t.Helper()
	cfg := testEnv.config.Copy()
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return pool
}

// freshSchemaPool returns a pool whose search_path is a new, empty schema
// of the test database, dropped when the test ends.
func freshSchemaPool(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	base := testPool(t)
	schema := "s_" + suffix8()
	ctx := context.Background()
	if _, err := base.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	pool := poolOnSchema(t, schema)
	t.Cleanup(func() {
		pool.Close()
		if _, err := base.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return pool, schema
}
