package turn_test

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn"
)

func readKept() (scan, live, objs uint64) {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}, {Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/objects:objects"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64()
}

func TestZZKept(t *testing.T) {
	a, store, b := anchorFixture(t, false)
	do := func(n int) {
		for range n {
			conv, _ := store.OpenConversation(t.Context(), bindings.OpenConversationInput{TenantID: "t1", AgentID: a.ID, AgentVersion: a.Version})
			if _, err := turn.Invoke(t.Context(), turn.Input{TenantID: "t1", Agent: a, ConversationID: conv.ID, UserMessage: "Find the NDA clause."}, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	do(100)
	s0, l0, o0 := readKept()
	do(4000)
	s1, l1, o1 := readKept()
	fmt.Printf("per turn: scan %d B, live %d B, objects %.2f; base scan %d\n", (s1-s0)/4000, (l1-l0)/4000, float64(o1-o0)/4000, s0)
}
