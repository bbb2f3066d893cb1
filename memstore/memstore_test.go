package memstore_test

import (
	"testing"
	"time"

	"github.com/kindgi/agents/bindings/bindingstest"
	"github.com/kindgi/agents/memstore"
)

// newHarness gives every suite a fresh Store on a manual clock.
func newHarness(t *testing.T) bindingstest.Harness {
	clock := bindingstest.NewClock(time.Time{})
	s := memstore.New(&memstore.Options{Now: clock.Now})
	return bindingstest.Harness{Conversations: s, Snapshots: s, Runs: s, Memory: s, Hitl: s, Compliance: s, Quotas: s, Clock: clock}
}

func TestConformance(t *testing.T) {
	bindingstest.RunAll(t, newHarness)
}

// TestConformanceOnTheWallClock runs the suite the way a host without a
// controllable clock would: the cases that need one skip, the rest pass on
// time.Now.
func TestConformanceOnTheWallClock(t *testing.T) {
	bindingstest.RunAll(t, func(t *testing.T) bindingstest.Harness {
		s := memstore.New(nil)
		return bindingstest.Harness{Conversations: s, Snapshots: s, Runs: s, Memory: s, Hitl: s, Compliance: s}
	})
}

// TestConformanceSkipsMissingBindings checks that a harness without a
// binding skips that binding's suite instead of failing.
func TestConformanceSkipsMissingBindings(t *testing.T) {
	bindingstest.RunSnapshotTests(t, func(t *testing.T) bindingstest.Harness {
		return bindingstest.Harness{Conversations: memstore.New(nil)}
	})
}
