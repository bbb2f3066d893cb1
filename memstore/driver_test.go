package memstore_test

import (
	"testing"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/bindingstest"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/memstore"
)

// basic exposes only a Store's basic bindings (no optional capability), as
// a host's own store would: the bindings journal.Adapt adapts.
type basic struct {
	runs  struct{ bindings.RunBinding }
	snaps struct{ bindings.RunSnapshotBinding }
	convs struct{ bindings.ConversationBinding }
	hitl  struct{ bindings.HitlBinding }
}

func newBasic(s *memstore.Store) *basic {
	b := &basic{}
	b.runs.RunBinding, b.snaps.RunSnapshotBinding, b.convs.ConversationBinding, b.hitl.HitlBinding = s, s, s, s
	return b
}

// TestAdapterConformance runs the driver suite against journal.Adapt over
// a memstore.Store's basic bindings only.
func TestAdapterConformance(t *testing.T) {
	bindingstest.RunDriverTests(t, func(t *testing.T) bindingstest.DriverHarness {
		clock := bindingstest.NewClock(bindingstest.DefaultStart)
		b := newBasic(memstore.New(&memstore.Options{Now: clock.Now}))
		return bindingstest.DriverHarness{
			Harness: bindingstest.Harness{Conversations: &b.convs, Snapshots: &b.snaps, Runs: &b.runs, Hitl: &b.hitl, Clock: clock},
			Driver:  journal.Adapt(journal.Bindings{Snapshots: &b.snaps, Runs: &b.runs, Conversations: &b.convs, Hitl: &b.hitl}),
		}
	})
}

// TestDriverConformance runs the driver suite against the Store's own
// journal.Driver.
func TestDriverConformance(t *testing.T) {
	bindingstest.RunDriverTests(t, func(t *testing.T) bindingstest.DriverHarness {
		clock := bindingstest.NewClock(bindingstest.DefaultStart)
		s := memstore.New(&memstore.Options{Now: clock.Now})
		return bindingstest.DriverHarness{
			Harness: bindingstest.Harness{Conversations: s, Snapshots: s, Runs: s, Hitl: s, Clock: clock},
			Driver:  s,
		}
	})
}
