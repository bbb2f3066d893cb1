package codes

import agents "github.com/kindgi/agents"

// Message is err's code and its message as a tool error tells it: the
// code first ("code: message"), or the message alone when err has none.
func Message(err error) (code, msg string) {
	code, msg = agents.CodeOf(err), err.Error()
	if code != "" {
		msg = code + ": " + msg
	}
	return code, msg
}
