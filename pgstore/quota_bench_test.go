package pgstore

import (
	"testing"

	"github.com/kindgi/agents/bindings"
)

// BenchmarkWorkersQuotas is BenchmarkWorkers' throughput with 8 workers,
// without quotas and with three (model-calls, tokens, the tool's
// tool-calls; never reached, one tenant, so every take of a quota queues
// on its row): what counting in PostgreSQL costs the fleet.
func BenchmarkWorkersQuotas(b *testing.B) {
	quotas := []bindings.Quota{
		{Name: "calls", Scope: bindings.QuotaModelCalls, Limit: 1e9, WindowSeconds: 60},
		{Name: "tokens", Scope: bindings.QuotaTokens, Limit: 1e12, WindowSeconds: 60},
		{Name: "lookups", Scope: bindings.QuotaToolCalls, ToolID: "acme.lookup", Limit: 1e9, WindowSeconds: 60},
	}
	b.Run("quotas=none/workers=8", func(b *testing.B) { benchmarkThroughput(b, newWorkerBench(b, "", 8, "on")) })
	b.Run("quotas=3/workers=8", func(b *testing.B) { benchmarkThroughput(b, newWorkerBench(b, "", 8, "on", quotas...)) })
}
