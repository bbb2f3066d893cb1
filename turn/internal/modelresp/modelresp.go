// Package modelresp checks what a model's response holds before turn
// journals it: a usage the turn can count (BadUsage), and tool calls with
// unique, valid ids and valid names (FixCalls), decided deterministically
// so that the journal, the stored messages and every later request agree.
// turn exports the limits as MaxToolCallIDLength, MaxToolNameLength and
// InvalidToolName. The calls' arguments are made valid JSON too
// (FixArguments).
package modelresp

import (
	"fmt"
	"math"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/kindgi/agents/bindings"
)

// Limits on a tool call (turn's MaxToolCallIDLength, MaxToolNameLength
// and InvalidToolName).
const (
	// MaxIDLength is the longest tool call id, in bytes, kept as the model
	// gave it.
	MaxIDLength = 64
	// MaxNameLength is the longest tool name, in bytes, of a call kept.
	MaxNameLength = 128
	// InvalidName stands for a tool name that broke MaxNameLength's rules.
	InvalidName = "_invalid_tool_name"
)

// BadUsage says what is wrong with the usage a provider reported: a cost
// that is not a finite number of 0 or more, or a negative token count. It
// returns "" for a usage the turn can count.
func BadUsage(u bindings.Usage) string {
	switch {
	case math.IsNaN(u.CostUsd) || math.IsInf(u.CostUsd, 0):
		return fmt.Sprintf("the provider reported a cost of %v US dollars, which is not a finite number", u.CostUsd)
	case u.CostUsd < 0:
		return fmt.Sprintf("the provider reported a negative cost (%v US dollars)", u.CostUsd)
	case u.InputTokens < 0 || u.OutputTokens < 0:
		return fmt.Sprintf("the provider reported a negative token count (%d input, %d output)", u.InputTokens, u.OutputTokens)
	}
	return ""
}

// validText reports whether s is a usable tool call id or name: 1 to
// max bytes of UTF-8 without control characters.
func validText(s string, max int) bool {
	if s == "" || len(s) > max || !utf8.ValidString(s) {
		return false
	}
	for _, c := range s {
		if unicode.IsControl(c) {
			return false
		}
	}
	return true
}

// FixCalls returns a copy of the tool calls of loop iteration i's
// response (nil for none) in which every call has a unique, valid id — an
// id that is empty, longer than MaxIDLength, not UTF-8, holds a control
// character or repeats an earlier one becomes "call-<i>-<position>"
// (1-based; "x" appended while that is taken) — and a valid name (one
// that breaks the same rules with MaxNameLength becomes InvalidName).
// Arguments are copied as they are.
func FixCalls(i int, calls []bindings.ToolCall) []bindings.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]bindings.ToolCall, len(calls))
	var seen map[string]bool // the ids so far, once there are many (fewer are scanned)
	taken := func(j int, id string) bool {
		if seen != nil {
			return seen[id]
		}
		for k := range j {
			if out[k].ID == id {
				return true
			}
		}
		return false
	}
	for j, c := range calls {
		if !validText(c.ID, MaxIDLength) || taken(j, c.ID) {
			c.ID = "call-" + strconv.Itoa(i) + "-" + strconv.Itoa(j+1)
			for taken(j, c.ID) {
				c.ID += "x"
			}
		}
		if seen == nil && j == 16 {
			seen = make(map[string]bool, len(calls))
			for k := range j {
				seen[out[k].ID] = true
			}
		}
		if seen != nil {
			seen[c.ID] = true
		}
		if !validText(c.Name, MaxNameLength) {
			c.Name = InvalidName
		}
		out[j] = c
	}
	return out
}
