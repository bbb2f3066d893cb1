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
	return bindingstest.Harness{Conversations: s, Snapshots: s, Runs: s, Memory: s, Hitl: s, Clock: clock}
}

func TestConformance(t *testing.T) {
	bindingstest.RunAll(t, newHarness)
}
