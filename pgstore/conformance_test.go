package pgstore

import (
	"testing"

	"github.com/kindgi/agents/bindings/bindingstest"
)

// TestConformance runs the whole binding conformance suite, the one
// memstore runs, against PostgreSQL. The cases use tenant ids of their
// own, so they share the test database; each gets its own clock.
func TestConformance(t *testing.T) {
	bindingstest.RunAll(t, storeHarness(testPool(t)))
}

// clockedStore is a Store on db whose clock is a fresh bindingstest clock,
// as each conformance case gets.
func clockedStore(db DB) (*Store, *bindingstest.Clock) {
	clock := bindingstest.NewClock(bindingstest.DefaultStart)
	return New(db, &Options{Now: clock.Now}), clock
}

// storeHarness makes each conformance case a clockedStore on db, bound to
// every binding of the suite.
func storeHarness(db DB) func(t *testing.T) bindingstest.Harness {
	return func(*testing.T) bindingstest.Harness {
		s, clock := clockedStore(db)
		return bindingstest.Harness{
			Conversations: s, Snapshots: s, Runs: s, Memory: s, Hitl: s, Compliance: s, Quotas: s,
			Clock: clock,
		}
	}
}
