package pgstore

import (
	"testing"

	"github.com/kindgi/agents/internal/turnrace"
)

// TestRaceManyTurnsOneStore runs 8 goroutines × 200 turns — fresh turns
// with distinct messages and tool arguments, and gated turns parked,
// approved and resumed — on one Store (run it with -race, as CI does),
// then checks that every Result is unchanged after the later turns ran
// and that every conversation holds exactly its own messages.
func TestRaceManyTurnsOneStore(t *testing.T) {
	store := New(testPool(t), nil)
	turnrace.Run(t, turnrace.Config{Store: store, TenantID: "race-tenant", Goroutines: 8, Turns: 200})
}
