package pgstore

import (
	"testing"

	"github.com/jackc/pgx/v5"
)

// BenchmarkWorkersPgBouncer measures the throughput of BenchmarkWorkers
// with 8 workers, each with a pool (and Store) of its own, once directly
// on the server and once with every statement through the PgBouncer of
// KINDGI_TEST_PGBOUNCER_URL in transaction mode (pgx's exec mode, each
// worker's LISTEN on a direct connection), in one run so the figures share
// the machine's load; and directly in exec mode, which tells the exec
// mode's cost from the extra hop's.
func BenchmarkWorkersPgBouncer(b *testing.B) {
	const workers = 8
	b.Run("direct/workers=8", func(b *testing.B) {
		benchmarkThroughput(b, newWorkerBench(b, "", workers, "on"))
	})
	b.Run("direct-exec-mode/workers=8", func(b *testing.B) {
		benchmarkThroughput(b, newWorkerBenchOn(b, "", workers, func() *Store {
			cfg := testEnv.config.Copy()
			cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
			p, err := newPool(cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(p.Close)
			return New(p, nil)
		}))
	})
	b.Run("pgbouncer/workers=8", func(b *testing.B) {
		cfg := bouncerConfig(b)
		benchmarkThroughput(b, newWorkerBenchOn(b, "", workers, func() *Store {
			listen, err := newPool(testEnv.config.Copy())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(listen.Close)
			p, err := newPool(cfg.Copy())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(p.Close)
			return New(p, &Options{ListenDB: listen})
		}))
	})
}
