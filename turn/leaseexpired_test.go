package turn_test

import (
	"testing"
	"time"

	"github.com/kindgi/agents/internal/runendtest"
	"github.com/kindgi/agents/memstore"
)

// TestStalledDriverIsToldItsLeaseExpired runs runendtest.RunLeaseLapse on
// memstore: a driver stalled in a tool call past its lease is refused
// run-busy, told its own lease expired or that another process drives
// the run, and the run stays resumable.
func TestStalledDriverIsToldItsLeaseExpired(t *testing.T) {
	runendtest.RunLeaseLapse(t, func(*testing.T) (runendtest.Store, func(time.Duration)) {
		clock := newClock()
		return memstore.New(&memstore.Options{Now: clock.Now}), clock.Advance
	})
}
