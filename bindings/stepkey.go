package bindings

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	agents "github.com/kindgi/agents"
)

// MaxStepKeyLength is the longest journal step key, in bytes, that a
// RunBinding accepts and every store must be able to hold (and index). The
// turn's keys are a node path with at most one tool-call id in it
// ("agent-loop/2/dispatch-tools/<toolCallId>/approval"), and a tool-call id
// that reaches a key is at most MaxIDLength bytes, so its keys stay well
// under the limit. Like ids, keys are valid UTF-8 without control
// characters.
const MaxStepKeyLength = 1024

// CheckStepKey returns an *agents.InvalidMessageError when key is empty,
// longer than MaxStepKeyLength, not valid UTF-8 or holds a control
// character, and nil otherwise. Stores call it on every step key they are
// given, before anything is stored.
func CheckStepKey(key string) error {
	if key == "" {
		return &agents.InvalidMessageError{Reason: "step key is empty"}
	}
	if len(key) > MaxStepKeyLength {
		return &agents.InvalidMessageError{Reason: fmt.Sprintf("step key is %d bytes long; the maximum is %d", len(key), MaxStepKeyLength)}
	}
	if !utf8.ValidString(key) {
		return &agents.InvalidMessageError{Reason: "step key is not valid UTF-8"}
	}
	for i, r := range key {
		if unicode.IsControl(r) {
			return &agents.InvalidMessageError{Reason: fmt.Sprintf("step key holds a control character (U+%04X) at byte %d", r, i)}
		}
	}
	return nil
}
