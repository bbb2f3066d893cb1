package memstore_test

import (
	"testing"

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
