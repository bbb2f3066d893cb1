package agenttool

import "encoding/json"

// HandoffOutput is the output of a handoff call that switched the turn to
// agent id@version: what its tool-completed event reports.
func HandoffOutput(id, version string) json.RawMessage {
	return mustSchema(map[string]string{"handoff": id + "@" + version})
}

// HandoffResult is the tool result that tells the model the handoff to
// agent id@version happened.
func HandoffResult(id, version string) json.RawMessage {
	return mustSchema(map[string]string{
		"handoff": id + "@" + version,
		"note":    "The conversation is handed over: from now on you are " + id + "; answer the user as that agent.",
	})
}
