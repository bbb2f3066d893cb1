package pgstore

import (
	"testing"

	"github.com/kindgi/agents/bindings/bindingstest"
)

// TestConformance runs the whole binding conformance suite, the one
// memstore runs, against PostgreSQL. The cases use tenant ids of their
// own, so they share the test database; each gets its own clock.
func TestConformance(t *testing.T) {
	pool := testPool(t)
	bindingstest.RunAll(t, func(t *testing.T) bindingstest.Harness {
		clock := bindingstest.NewClock(bindingstest.DefaultStart)
		s := New(pool, &Options{Now: clock.Now})
		return bindingstest.Harness{
			Conversations: s, Snapshots: s, Runs: s, Memory: s, Hitl: s, Compliance: s, Quotas: s,
			Clock: clock,
		}
	})
}
