package turn_test

import (
	"testing"
	"time"

	"github.com/kindgi/agents/bindings/bindingstest"
	"github.com/kindgi/agents/internal/journaltest"
	"github.com/kindgi/agents/memstore"
)

// TestScenarioJournalIsGolden drives the golden scenario (journaltest) on
// memstore, through its own Driver and through journal.Adapt of its basic
// bindings: both must journal the golden files, which pgstore's
// TestScenarioJournalIsGoldenOnPgstore holds PostgreSQL to as well.
func TestScenarioJournalIsGolden(t *testing.T) {
	for _, adapt := range []bool{false, true} {
		name := "driver"
		if adapt {
			name = "adapter"
		}
		t.Run(name, func(t *testing.T) {
			clock := bindingstest.NewClock(time.Time{})
			store := memstore.New(&memstore.Options{Now: clock.Now})
			journaltest.CheckScenarioGolden(t, store, "golden-tenant", clock.Now, adapt)
		})
	}
}
