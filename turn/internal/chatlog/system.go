package chatlog

import (
	"slices"

	"github.com/kindgi/agents/bindings"
)

// WithSystem returns a copy of msgs whose system message is system: the
// first message replaced when it is the system's, else one inserted
// first. msgs is not written to.
func WithSystem(msgs []bindings.ChatMessage, system string) []bindings.ChatMessage {
	msgs = slices.Clone(msgs)
	sys := bindings.ChatMessage{Role: bindings.ChatSystem, Content: system}
	if len(msgs) > 0 && msgs[0].Role == bindings.ChatSystem {
		msgs[0] = sys
		return msgs
	}
	return slices.Insert(msgs, 0, sys)
}
