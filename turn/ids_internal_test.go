package turn

import (
	"fmt"
	"strings"
	"testing"
)

// TestDerivedIDsSurviveLaterIDs would catch a breach of the invariant
// derivedID's strings rest on (internal/frozen: their bytes are never
// written again): it keeps the ids a pooled run derived, derives many more
// (filling chunk after chunk), releases the run and drives others from the
// pool, and checks every id kept is unchanged.
func TestDerivedIDsSurviveLaterIDs(t *testing.T) {
	var b Bindings
	type kept struct{ id, want string }
	var all []kept
	for round := range 4 {
		r := newPooledRun(&b, nil, false, Input{}, fmt.Sprintf("run-%d-%s", round, strings.Repeat("x", 20)), "", "", nil)
		for i := range 200 {
			key := fmt.Sprintf("agent-loop/%d/dispatch-tools/call_%d", i, round)
			all = append(all, kept{r.derivedID(key), r.id + "/" + key})
		}
		r.release()
	}
	for _, k := range all {
		if k.id != k.want {
			t.Fatalf("a derived id changed after later ids: %q, want %q", k.id, k.want)
		}
	}
}
