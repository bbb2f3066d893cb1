package pgstore

import (
	"testing"
	"time"

	"github.com/kindgi/agents/bindings/bindingstest"
	"github.com/kindgi/agents/internal/journaltest"
)

// TestScenarioJournalIsGoldenOnPgstore drives the golden scenario
// (journaltest) on PostgreSQL, through the Store's own Driver and through
// journal.Adapt of its basic bindings: both must journal the golden files
// memstore is held to (turn's TestScenarioJournalIsGolden).
func TestScenarioJournalIsGoldenOnPgstore(t *testing.T) {
	pool := testPool(t)
	for _, adapt := range []bool{false, true} {
		clock := bindingstest.NewClock(time.Time{})
		store := New(pool, &Options{Now: clock.Now})
		journaltest.CheckScenarioGolden(t, store, "golden-"+randomID()[:8], clock.Now, adapt)
	}
}
