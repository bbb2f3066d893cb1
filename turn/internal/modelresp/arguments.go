package modelresp

import (
	"bytes"
	"encoding/json"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/drive"
)

// FixArguments makes every call's arguments valid JSON, in place: none
// are {}, malformed ones (not JSON in UTF-8) become a JSON string, which
// the tool's input schema then refuses, and valid ones are compacted as
// the journal stores them (drive.Journaled).
func FixArguments(calls []bindings.ToolCall) {
	for j := range calls {
		c := &calls[j]
		switch {
		case len(c.Arguments) == 0:
			c.Arguments = json.RawMessage(`{}`)
		case len(bytes.TrimSpace(c.Arguments)) == 0 || bindings.CheckJSON("", c.Arguments) != nil:
			c.Arguments, _ = json.Marshal(string(c.Arguments))
		default:
			c.Arguments = drive.Journaled(c.Arguments)
		}
	}
}
