package pgstore

import (
	"testing"

	"github.com/kindgi/agents/internal/runendtest"
)

// TestTurnOddValuesEndTheRun: on PostgreSQL, a NUL, bytes that are not
// UTF-8 or a "\u0000" in a model answer, a tool's arguments or output, or
// the user message end the run: completed and read back byte for byte
// (the store's contract for free text and JSON), or failed for good —
// never left running.
func TestTurnOddValuesEndTheRun(t *testing.T) {
	s := New(testPool(t), nil)
	runendtest.Run(t, func(*testing.T) runendtest.Store { return s })
}

// TestWorkerStuckRunExplainsItselfAndEnds: on PostgreSQL, a run that no
// worker's bindings can drive records each failed drive (code, message,
// count across two workers, in the database) and is failed after
// MaxDriveAttempts.
func TestWorkerStuckRunExplainsItselfAndEnds(t *testing.T) {
	s := New(testPool(t), nil)
	runendtest.RunStuck(t, func(*testing.T) runendtest.StuckStore { return s })
}
