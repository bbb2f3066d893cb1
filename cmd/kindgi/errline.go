package main

import (
	"strings"

	agents "github.com/kindgi/agents"
)

// errLine formats err for a diagnostic line as "CODE: message", naming the
// cause once: many error messages begin with their code in words
// ("persistence error: …" for persistence-error, "missing parameter
// \"x\"" for missing-parameter), and that prefix is dropped. An error without a code is its message.
func errLine(err error) string {
	msg := err.Error()
	code := agents.CodeOf(err)
	if code == "" {
		return msg
	}
	words := strings.ReplaceAll(code, "-", " ")
	switch {
	case strings.EqualFold(msg, words):
		msg = ""
	case len(msg) > len(words)+1 && strings.EqualFold(msg[:len(words)], words) && (msg[len(words)] == ':' || msg[len(words)] == ' '):
		msg = strings.TrimSpace(msg[len(words)+1:])
	}
	if msg == "" {
		return code
	}
	return code + ": " + msg
}
