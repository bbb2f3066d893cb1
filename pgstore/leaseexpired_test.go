package pgstore

import (
	"testing"
	"time"

	"github.com/kindgi/agents/internal/runendtest"
)

// TestStalledDriverIsToldItsLeaseExpired stalls a driver in a tool call
// past its lease on pgstore (the store's clock moves on while the tool
// runs): its next write is refused run-busy, with a message that says its
// own lease expired when nobody took the run, and "being driven by another
// process" only when another owner holds it. The run stays resumable.
func TestStalledDriverIsToldItsLeaseExpired(t *testing.T) {
	runendtest.RunLeaseLapse(t, func(t *testing.T, now func() time.Time) runendtest.Store {
		return New(testPool(t), &Options{Now: now})
	})
}
