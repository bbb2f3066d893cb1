package turn_test

import (
	"testing"

	"github.com/kindgi/agents/internal/turnrace"
	"github.com/kindgi/agents/memstore"
)

// TestRaceManyTurnsOneMemstore runs 8 goroutines × 200 turns — fresh
// turns with distinct messages and tool arguments, and gated turns
// parked, approved and resumed — on one memstore (run it with -race, as
// CI does), then checks that every Result is unchanged after the later
// turns ran and that every conversation holds exactly its own messages.
func TestRaceManyTurnsOneMemstore(t *testing.T) {
	store := memstore.New(nil)
	turnrace.Run(t, turnrace.Config{Store: store, TenantID: "race", Goroutines: 8, Turns: 200})
}
