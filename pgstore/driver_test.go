package pgstore

import (
	"testing"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/bindingstest"
	"github.com/kindgi/agents/bindings/journal"
)

// TestDriverConformance runs the driver suite against the Store's own
// journal.Driver on PostgreSQL.
func TestDriverConformance(t *testing.T) {
	pool := testPool(t)
	bindingstest.RunDriverTests(t, func(t *testing.T) bindingstest.DriverHarness {
		s, clock := clockedStore(pool)
		return bindingstest.DriverHarness{
			Harness: bindingstest.Harness{Conversations: s, Snapshots: s, Runs: s, Hitl: s, Clock: clock},
			Driver:  s,
		}
	})
}

// TestAdapterConformance runs the driver suite against journal.Adapt over
// the Store's basic bindings only, on PostgreSQL: the reference, on the
// database.
func TestAdapterConformance(t *testing.T) {
	pool := testPool(t)
	bindingstest.RunDriverTests(t, func(t *testing.T) bindingstest.DriverHarness {
		s, clock := clockedStore(pool)
		runs := struct{ bindings.RunBinding }{s}
		snaps := struct{ bindings.RunSnapshotBinding }{s}
		convs := struct{ bindings.ConversationBinding }{s}
		hitl := struct{ bindings.HitlBinding }{s}
		return bindingstest.DriverHarness{
			Harness: bindingstest.Harness{Conversations: convs, Snapshots: snaps, Runs: runs, Hitl: hitl, Clock: clock},
			Driver:  journal.Adapt(journal.Bindings{Snapshots: snaps, Runs: runs, Conversations: convs, Hitl: hitl}),
		}
	})
}
