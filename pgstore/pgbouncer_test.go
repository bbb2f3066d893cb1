package pgstore

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/bindingstest"
	"github.com/kindgi/agents/internal/pgtest"
)

// The tests of this file run the Store through the PgBouncer of
// KINDGI_TEST_PGBOUNCER_URL (transaction pooling, started by .ci/run):
// every statement through it, in pgx's exec mode, and LISTEN on a direct
// connection (Options.ListenDB or ListenURL).

// testDatabaseURL is the URL of this binary's test database, direct.
func testDatabaseURL(t testing.TB) string {
	t.Helper()
	testPool(t)
	u, err := url.Parse(testEnv.adminURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + testEnv.name
	return u.String()
}

// bouncerConfig is the pool configuration of the test database through
// PgBouncer.
func bouncerConfig(t testing.TB) *pgxpool.Config {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.BouncerURL(t, testDatabaseURL(t)))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ConnConfig.DefaultQueryExecMode != pgx.QueryExecModeExec {
		t.Fatalf("the PgBouncer URL sets exec mode %v, want exec", cfg.ConnConfig.DefaultQueryExecMode)
	}
	return cfg
}

// bouncerPool is a pool on the test database through PgBouncer, closed
// when the test ends.
func bouncerPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := newPool(bouncerConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestPgBouncerPoolsTransactions checks the ground the other tests stand
// on: the PgBouncer they reach pools in transaction mode, and the
// conformance suite's statements really pass through it.
func TestPgBouncerPoolsTransactions(t *testing.T) {
	ctx := t.Context()
	u, err := url.Parse(pgtest.BouncerURL(t, testDatabaseURL(t)))
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/pgbouncer" // the admin console
	q := u.Query()
	q.Set("default_query_exec_mode", "simple_protocol")
	u.RawQuery = q.Encode()
	admin, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	show := func(what string) []map[string]string {
		rows, err := admin.Query(ctx, "SHOW "+what)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []map[string]string
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			m := map[string]string{}
			for i, f := range rows.FieldDescriptions() {
				m[f.Name] = fmt.Sprint(vals[i])
			}
			out = append(out, m)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	var mode string
	for _, kv := range show("CONFIG") {
		if kv["key"] == "pool_mode" {
			mode = kv["value"]
		}
	}
	if mode != "transaction" {
		t.Fatalf("PgBouncer pool_mode = %q, want transaction", mode)
	}
	s := New(bouncerPool(t), nil)
	if _, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "bouncer", AgentID: "a", AgentVersion: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	// The pool keeps its connection: PgBouncer lists it as a client of the
	// test database.
	clients := 0
	for _, c := range show("CLIENTS") {
		if c["database"] == testEnv.name {
			clients++
		}
	}
	if clients == 0 {
		t.Errorf("PgBouncer has no client of database %s: the Store did not go through it", testEnv.name)
	}
}

// TestConformanceThroughPgBouncer runs the conformance suite with every
// statement through PgBouncer in transaction mode (exec mode, no prepared
// statement outliving its transaction).
func TestConformanceThroughPgBouncer(t *testing.T) {
	pool := bouncerPool(t)
	bindingstest.RunAll(t, func(t *testing.T) bindingstest.Harness {
		clock := bindingstest.NewClock(bindingstest.DefaultStart)
		s := New(pool, &Options{Now: clock.Now, ListenDB: testPool(t)})
		return bindingstest.Harness{Conversations: s, Snapshots: s, Runs: s, Memory: s, Hitl: s, Compliance: s, Clock: clock}
	})
}

// TestWatchRunsThroughPgBouncer: a Store whose DB is PgBouncer LISTENs on
// the direct session of Options.ListenURL (Open) or ListenDB (New), and
// sees the changes committed through PgBouncer; Close closes Open's
// listen pool with the Store's.
func TestWatchRunsThroughPgBouncer(t *testing.T) {
	ctx := t.Context()
	opened, err := Open(ctx, pgtest.BouncerURL(t, testDatabaseURL(t)), &Options{ListenURL: testDatabaseURL(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	listen := opened.listenDB
	if listen == nil || opened.DB().(*pgxpool.Pool).Config().ConnConfig.Port == listen.Config().ConnConfig.Port {
		t.Fatalf("Open's listen pool %v is not the direct server", listen)
	}
	for name, s := range map[string]*Store{
		"Open with ListenURL": opened,
		"New with ListenDB":   New(bouncerPool(t), &Options{ListenDB: testPool(t)}),
	} {
		t.Run(name, func(t *testing.T) {
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			ch, err := s.WatchRuns(wctx)
			if err != nil {
				t.Fatal(err)
			}
			tenant, run := "bouncer-watch", "run-"+randomID()
			// The LISTEN connection is taken in the background: start runs
			// until one is seen.
			deadline := time.After(30 * time.Second)
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for i := 0; ; i++ {
				id := fmt.Sprintf("%s-%d", run, i)
				if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: id, FlowID: "agent.turn", FlowVersion: "1.0.0", Status: bindings.RunQueued}); err != nil {
					t.Fatal(err)
				}
				select {
				case c := <-ch:
					if c.RunID != "" && (c.TenantID != tenant || c.Status != bindings.RunQueued || !c.Claimable) {
						t.Fatalf("change %+v, want a claimable queued run of %s", c, tenant)
					}
					if c.RunID != "" {
						return
					}
				case <-tick.C:
				case <-deadline:
					t.Fatal("no notification of a run started through PgBouncer within 30s")
				}
			}
		})
	}
	opened.Close()
	if err := listen.Ping(ctx); err == nil {
		t.Error("the listen pool Open made is still open after Close")
	}
}
