package drive

import (
	"fmt"
	"strings"
	"testing"
)

// TestDerivedIDsSurviveLaterIDs would catch a breach of the invariant
// DerivedID's strings rest on (internal/frozen: their bytes are never
// written again): it keeps the ids a pooled drive derived, derives many more
// (filling chunk after chunk), releases the memory and drives others in
// it, and checks every id kept is unchanged.
func TestDerivedIDsSurviveLaterIDs(t *testing.T) {
	m := &Mem{}
	var j Journal
	type kept struct{ id, want string }
	var all []kept
	for round := range 4 {
		id := fmt.Sprintf("run-%d-%s", round, strings.Repeat("x", 20))
		j.Reset()
		j.Init(&Config{RunID: id}, m, nil)
		for i := range 200 {
			key := fmt.Sprintf("agent-loop/%d/dispatch-tools/call_%d", i, round)
			all = append(all, kept{j.DerivedID(key), id + "/" + key})
		}
		m.Release()
	}
	for _, k := range all {
		if k.id != k.want {
			t.Fatalf("a derived id changed after later ids: %q, want %q", k.id, k.want)
		}
	}
}
