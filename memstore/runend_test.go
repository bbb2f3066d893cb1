package memstore_test

import (
	"testing"
	"time"

	"github.com/kindgi/agents/internal/runendtest"
	"github.com/kindgi/agents/memstore"
)

// TestTurnOddValuesEndTheRun: on memstore, a NUL, bytes that are not
// UTF-8 or a "\u0000" in a model answer, a tool's arguments or output, or
// the user message end the run: completed and read back byte for byte,
// or failed for good — never left running.
func TestTurnOddValuesEndTheRun(t *testing.T) {
	runendtest.Run(t, func(*testing.T) runendtest.Store { return memstore.New(nil) })
}

// TestWorkerStuckRunExplainsItselfAndEnds: on memstore, a run that no
// worker's bindings can drive records each failed drive (code, message,
// count across two workers) and is failed after MaxDriveAttempts.
func TestWorkerStuckRunExplainsItselfAndEnds(t *testing.T) {
	runendtest.RunStuck(t, func(*testing.T) runendtest.StuckStore { return memstore.New(nil) })
}

// TestStalledDriverIsToldItsLeaseExpired stalls a driver in a tool call
// past its lease on memstore (the store's clock moves on while the tool
// runs): its next write is refused run-busy, with a message that says its
// own lease expired when nobody took the run, and "being driven by another
// process" only when another owner holds it. Either way the run stays
// resumable.
func TestStalledDriverIsToldItsLeaseExpired(t *testing.T) {
	runendtest.RunLeaseLapse(t, func(_ *testing.T, now func() time.Time) runendtest.Store {
		return memstore.New(&memstore.Options{Now: now})
	})
}
