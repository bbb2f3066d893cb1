package turn_test

import (
	"fmt"
	"testing"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn"
)

func TestZZProbe(t *testing.T) {
	a, store, b := anchorFixture(t, false)
	for range 3 {
		conv, _ := store.OpenConversation(t.Context(), bindings.OpenConversationInput{TenantID: "t1", AgentID: a.ID, AgentVersion: a.Version})
		if _, err := turn.Invoke(t.Context(), turn.Input{TenantID: "t1", Agent: a, ConversationID: conv.ID, UserMessage: "Find the NDA clause."}, b); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Print(turn.PoolProbe())
}
