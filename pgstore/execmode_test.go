package pgstore

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/kindgi/agents/bindings/bindingstest"
)

// TestConformanceInEveryExecMode runs the conformance suite with each of
// pgx's query execution modes other than the default (which
// TestConformance covers): a batch must stay one implicit transaction,
// tenant setting included, whether its statements are prepared, described
// or sent as one simple-protocol query (as behind PgBouncer in transaction
// mode).
func TestConformanceInEveryExecMode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite four more times")
	}
	testPool(t)
	for _, mode := range []pgx.QueryExecMode{
		pgx.QueryExecModeCacheDescribe,
		pgx.QueryExecModeDescribeExec,
		pgx.QueryExecModeExec,
		pgx.QueryExecModeSimpleProtocol,
	} {
		t.Run(mode.String(), func(t *testing.T) {
			cfg := testEnv.config.Copy()
			cfg.ConnConfig.DefaultQueryExecMode = mode
			pool, err := newPool(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			bindingstest.RunAll(t, storeHarness(pool))
		})
	}
}
