// Package pgtest gives tests that need PostgreSQL a database of their
// own on the server KINDGI_TEST_DATABASE_URL names.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// AdminURL is KINDGI_TEST_DATABASE_URL; the test is skipped when it is
// not set.
func AdminURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("KINDGI_TEST_DATABASE_URL")
	if u == "" {
		t.Skip("KINDGI_TEST_DATABASE_URL is not set")
	}
	return u
}

// FreshDatabase creates a database named prefix plus a random suffix on
// the server of adminURL, drops it (WITH FORCE) when the test ends, and
// returns its URL.
func FreshDatabase(t testing.TB, adminURL, prefix string) string {
	t.Helper()
	u, drop, err := Create(adminURL, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Error(err)
		}
	})
	return u
}

// Create is FreshDatabase for a TestMain: it returns the new database's
// URL and the function that drops it.
func Create(adminURL, prefix string) (dbURL string, drop func() error, err error) {
	u, err := url.Parse(adminURL)
	if err != nil {
		return "", nil, fmt.Errorf("KINDGI_TEST_DATABASE_URL is not a URL: %w", err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := prefix + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, err
	}
	drop = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, adminURL)
		if err != nil {
			return fmt.Errorf("drop %s: %w", name, err)
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("drop %s: %w", name, err)
		}
		return nil
	}
	u.Path = "/" + name
	return u.String(), drop, nil
}

// BouncerEnv names the PgBouncer (transaction pooling, in front of the
// server of KINDGI_TEST_DATABASE_URL) that .ci/run starts.
const BouncerEnv = "KINDGI_TEST_PGBOUNCER_URL"

// BouncerURL returns dbURL — a database on the server of
// KINDGI_TEST_DATABASE_URL, such as one FreshDatabase made — reached
// through the PgBouncer of BouncerEnv: that URL's host, port and user info
// (when it has some), dbURL's database and parameters, and pgx's
// default_query_exec_mode=exec, since transaction pooling keeps no
// prepared statement from one transaction to the next. The test is
// skipped when BouncerEnv is not set, and fails instead when CI is set
// (.ci/run always sets it).
func BouncerURL(t testing.TB, dbURL string) string {
	t.Helper()
	b := os.Getenv(BouncerEnv)
	if b == "" {
		if os.Getenv("CI") != "" {
			t.Fatal(BouncerEnv + " is not set (CI must run the PgBouncer tests)")
		}
		t.Skip(BouncerEnv + " is not set")
	}
	bu, err := url.Parse(b)
	if err != nil || bu.Host == "" {
		t.Fatalf("%s is not a URL with a host: %q", BouncerEnv, b)
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("database URL: %v", err)
	}
	u.Host = bu.Host
	if bu.User != nil {
		u.User = bu.User
	}
	q := u.Query()
	q.Set("default_query_exec_mode", "exec")
	u.RawQuery = q.Encode()
	return u.String()
}
