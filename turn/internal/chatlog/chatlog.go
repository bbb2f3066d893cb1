// Package chatlog makes the message list a turn sends to a model well
// formed: stored conversation messages turned into model messages
// (AppendHistory), and tool calls paired with their answers the way model
// APIs (Chat Completions, Anthropic) accept them (WellFormed); and
// whether a stored tool message of the conversation says a tool ran (Used).
package chatlog

import (
	"slices"
	"strconv"

	"github.com/kindgi/agents/bindings"
)

// AppendHistory appends stored messages to out as model messages, made well
// formed (WellFormed): a tool result whose call fell outside the window,
// and a call of an earlier turn that never got its result (that turn
// failed, was cancelled or halted mid-way), are left out.
//
// The messages are appended to out itself, and fixed there when they are
// not well formed.
func AppendHistory(out []bindings.ChatMessage, hist []bindings.ConversationMessage) []bindings.ChatMessage {
	n := len(out)
	out = appendChatMessages(out, hist)
	if IsWellFormed(out[n:]) {
		return out
	}
	fixed := fixWellFormed(out[n:])
	return append(out[:n], fixed...) // fixed is no longer than what it replaces
}

// appendChatMessages appends the stored messages hist to out as model
// messages, as they are.
func appendChatMessages(out []bindings.ChatMessage, hist []bindings.ConversationMessage) []bindings.ChatMessage {
	for _, m := range hist {
		switch m.Role {
		case bindings.RoleUser:
			out = append(out, bindings.ChatMessage{Role: bindings.ChatUser, Content: m.Content})
		case bindings.RoleSystem:
			out = append(out, bindings.ChatMessage{Role: bindings.ChatSystem, Content: m.Content})
		case bindings.RoleAgent:
			out = append(out, bindings.ChatMessage{Role: bindings.ChatAssistant, Content: m.Content, ToolCalls: m.ToolCalls})
		case bindings.RoleTool:
			out = append(out, bindings.ChatMessage{Role: bindings.ChatTool, Content: m.Content, ToolCallID: m.ToolCallID})
		}
	}
	return out
}

// WellFormed returns msgs as model APIs (Chat Completions, Anthropic)
// accept them, which is msgs itself when it already is:
//
//   - every tool call of an assistant message is answered by a tool
//     message among those right after it (before the next message of
//     another role); a call with no answer there is left out, and so is
//     an assistant message left with neither calls nor text;
//   - every tool message answers a call of the assistant message it
//     follows; one that answers none (its call fell outside the history
//     window, or was answered already) is left out;
//   - tool call ids are unique within msgs: a call whose id an answered
//     call of a later assistant message also has (a provider that gives
//     no ids gets call-1-1 in every turn) is renamed, with its answer, to
//     "call-h<message>-<position>" ("x" appended while that is taken), so
//     the latest calls keep the ids the model gave them.
//
// Matching is per assistant message, so per turn and per loop iteration:
// an answer never pairs with a call of another turn.
func WellFormed(msgs []bindings.ChatMessage) []bindings.ChatMessage {
	if IsWellFormed(msgs) {
		return msgs
	}
	return fixWellFormed(msgs)
}

// fixWellFormed is WellFormed of msgs that are not well formed: a new
// slice.
func fixWellFormed(msgs []bindings.ChatMessage) []bindings.ChatMessage {
	// A group is an assistant message with calls and its answers: out[at]
	// and out[answerAt[first+j]] answering its call j.
	type group struct{ at, first int }
	out := make([]bindings.ChatMessage, 0, len(msgs))
	var groups []group
	var answerAt []int
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		switch {
		case m.Role == bindings.ChatTool:
			continue // answers no call of the message it follows
		case m.Role != bindings.ChatAssistant || len(m.ToolCalls) == 0:
			out = append(out, m)
			continue
		}
		end := i + 1
		for end < len(msgs) && msgs[end].Role == bindings.ChatTool {
			end++
		}
		// A call is kept when it is the first of its id and an answer
		// follows; its answer is the first with its id.
		orig := m.ToolCalls
		answer := func(j int) int {
			c := orig[j]
			for _, k := range orig[:j] {
				if k.ID == c.ID {
					return -1 // a second call with the id: its answer is the first's
				}
			}
			for k := i + 1; k < end; k++ {
				if msgs[k].ToolCallID == c.ID {
					return k
				}
			}
			return -1
		}
		kept := 0
		for j := range orig {
			if answer(j) >= 0 {
				kept++
			}
		}
		if kept == 0 {
			if m.Content != "" {
				out = append(out, bindings.ChatMessage{Role: m.Role, Content: m.Content})
			}
			i = end - 1
			continue
		}
		if kept < len(m.ToolCalls) {
			calls := make([]bindings.ToolCall, 0, kept)
			for j, c := range orig {
				if answer(j) >= 0 {
					calls = append(calls, c)
				}
			}
			m.ToolCalls = calls
		} // else all are kept: the slice is shared, and cloned before a rename
		if groups == nil {
			groups, answerAt = make([]group, 0, len(msgs)/2), make([]int, 0, len(msgs)/2)
		}
		groups = append(groups, group{at: len(out), first: len(answerAt)})
		out = append(out, m)
		for j := range orig {
			if k := answer(j); k >= 0 {
				answerAt = append(answerAt, len(out))
				out = append(out, msgs[k])
			}
		}
		i = end - 1
	}
	// The ids of the kept calls, and those assigned, latest first.
	var taken, assigned idSet
	taken.init(len(answerAt))
	assigned.init(len(answerAt))
	for _, g := range groups {
		for _, c := range out[g.at].ToolCalls {
			taken.add(c.ID)
		}
	}
	for gi := len(groups) - 1; gi >= 0; gi-- {
		g := groups[gi]
		calls := out[g.at].ToolCalls
		renamed := false
		for j, c := range calls {
			if !assigned.has(c.ID) {
				assigned.add(c.ID)
				continue
			}
			id := "call-h" + strconv.Itoa(gi+1) + "-" + strconv.Itoa(j+1)
			for taken.has(id) || assigned.has(id) {
				id += "x"
			}
			assigned.add(id)
			if !renamed {
				calls = slices.Clone(calls)
				renamed = true
			}
			calls[j].ID = id
			// The answers follow the calls' order (see above).
			out[answerAt[g.first+j]].ToolCallID = id
		}
		out[g.at].ToolCalls = calls
	}
	return out
}

// IsWellFormed reports whether msgs already meets WellFormed's rules.
func IsWellFormed(msgs []bindings.ChatMessage) bool {
	const scan = 16 // ids checked by scanning up to this many
	var idBuf [scan]string
	ids := idBuf[:0] // every call id so far, until seen holds them
	var seen map[string]bool
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == bindings.ChatTool {
			return false // not right after its call's message
		}
		if m.Role != bindings.ChatAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		end := i + 1
		for end < len(msgs) && msgs[end].Role == bindings.ChatTool {
			end++
		}
		if end-(i+1) != len(m.ToolCalls) {
			return false
		}
		for j, c := range m.ToolCalls {
			if msgs[i+1+j].ToolCallID != c.ID {
				return false // answers in the calls' order, one each
			}
			if seen == nil && len(ids) == scan {
				seen = make(map[string]bool, 2*scan)
				for _, id := range ids {
					seen[id] = true
				}
			}
			if seen != nil {
				if seen[c.ID] {
					return false
				}
				seen[c.ID] = true
				continue
			}
			if slices.Contains(ids, c.ID) {
				return false
			}
			ids = append(ids, c.ID)
		}
		i = end - 1
	}
	return true
}
