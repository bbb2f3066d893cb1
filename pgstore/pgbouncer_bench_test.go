package pgstore

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// BenchmarkWorkersPgBouncer measures the throughput of BenchmarkWorkers
// with 8 workers, each with a pool (and Store) of its own: directly on
// the server (pgx's default mode, cached prepared statements, and its exec
// mode, which tells the mode's cost from the extra hop's), then with every
// statement through the PgBouncer of KINDGI_TEST_PGBOUNCER_URL in
// transaction mode (exec and cache_describe modes, each worker's LISTEN on
// a direct connection), in one run so the figures share the machine's
// load.
func BenchmarkWorkersPgBouncer(b *testing.B) {
	const workers = 8
	b.Run("direct/workers=8", func(b *testing.B) {
		benchmarkThroughput(b, newWorkerBench(b, "", workers, "on"))
	})
	b.Run("direct-exec/workers=8", func(b *testing.B) {
		benchmarkThroughput(b, newWorkerBenchOn(b, "", workers, nil, func() *Store {
			return New(benchPool(b, testEnv.config, pgx.QueryExecModeExec), nil)
		}))
	})
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeExec, pgx.QueryExecModeCacheDescribe} {
		b.Run("pgbouncer-"+mode.String()+"/workers=8", func(b *testing.B) {
			cfg := bouncerConfig(b)
			benchmarkThroughput(b, newWorkerBenchOn(b, "", workers, nil, func() *Store {
				listen := benchPool(b, testEnv.config, pgx.QueryExecModeCacheStatement)
				return New(benchPool(b, cfg, mode), &Options{ListenDB: listen})
			}))
		})
	}
}

// benchPool is a pool of cfg in exec mode mode, closed when b ends.
func benchPool(b *testing.B, cfg *pgxpool.Config, mode pgx.QueryExecMode) *pgxpool.Pool {
	cfg = cfg.Copy()
	cfg.ConnConfig.DefaultQueryExecMode = mode
	p, err := newPool(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	return p
}
