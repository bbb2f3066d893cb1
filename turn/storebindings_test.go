package turn_test

import (
	"testing"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/turn"
)

func TestStoreBindingsFillsEveryFieldTheStoreImplements(t *testing.T) {
	s := memstore.New(nil)
	b := turn.StoreBindings(s)
	for name, got := range map[string]any{
		"Conversations": b.Conversations, "Snapshots": b.Snapshots, "Runs": b.Runs, "Memory": b.Memory,
		"Hitl": b.Hitl, "Provenance.Emitter": b.Provenance.Emitter, "Compliance": b.Compliance,
	} {
		if got != any(s) {
			t.Errorf("%s = %v, want the store", name, got)
		}
	}
	if b.Providers != nil || b.Tools != nil || b.Provenance.Keys != nil || b.Guardrails != nil || b.OnEvent != nil {
		t.Errorf("StoreBindings set a field that is not storage: %+v", b)
	}

	// A store with only some bindings fills only those.
	only := conversationsOnly{s}
	b = turn.StoreBindings(only)
	if b.Conversations != (bindings.ConversationBinding)(only) || b.Runs != nil || b.Snapshots != nil || b.Hitl != nil || b.Memory != nil || b.Compliance != nil {
		t.Errorf("conversations-only store: %+v", b)
	}
	if b := turn.StoreBindings(nil); b.Conversations != nil || b.Runs != nil {
		t.Errorf("StoreBindings(nil) = %+v, want zero", b)
	}
}

// conversationsOnly is a store that implements ConversationBinding alone.
type conversationsOnly struct{ bindings.ConversationBinding }
