package chatlog

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kindgi/agents/bindings"
)

// TestWellFormed pins what WellFormed keeps, leaves out and renames.
func TestWellFormed(t *testing.T) {
	user := func(s string) bindings.ChatMessage { return bindings.ChatMessage{Role: bindings.ChatUser, Content: s} }
	calls := func(text string, ids ...string) bindings.ChatMessage {
		m := bindings.ChatMessage{Role: bindings.ChatAssistant, Content: text}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, bindings.ToolCall{ID: id, Name: "t"})
		}
		return m
	}
	result := func(id string) bindings.ChatMessage {
		return bindings.ChatMessage{Role: bindings.ChatTool, Content: "r-" + id, ToolCallID: id}
	}
	for _, c := range []struct {
		name    string
		in, out []bindings.ChatMessage
	}{
		{"already well formed", []bindings.ChatMessage{user("u"), calls("", "a", "b"), result("a"), result("b"), user("v")}, nil},
		{"unanswered call left out", []bindings.ChatMessage{user("u"), calls("", "a", "b"), result("a"), user("v")},
			[]bindings.ChatMessage{user("u"), calls("", "a"), result("a"), user("v")}},
		{"no answer at all: the text stays", []bindings.ChatMessage{user("u"), calls("thinking", "a"), user("v")},
			[]bindings.ChatMessage{user("u"), {Role: bindings.ChatAssistant, Content: "thinking"}, user("v")}},
		{"no answer and no text: the message goes", []bindings.ChatMessage{user("u"), calls("", "a"), user("v")},
			[]bindings.ChatMessage{user("u"), user("v")}},
		{"answer of no call left out", []bindings.ChatMessage{result("x"), user("u"), calls("", "a"), result("a"), result("z")},
			[]bindings.ChatMessage{user("u"), calls("", "a"), result("a")}},
		{"answers in the calls' order", []bindings.ChatMessage{calls("", "a", "b"), result("b"), result("a")},
			[]bindings.ChatMessage{calls("", "a", "b"), result("a"), result("b")}},
		{"an answer after another message answers nothing", []bindings.ChatMessage{calls("", "a"), user("u"), result("a")},
			[]bindings.ChatMessage{user("u")}},
		{"an id twice in one message: the first", []bindings.ChatMessage{calls("", "a", "a"), result("a"), result("a")},
			[]bindings.ChatMessage{calls("", "a"), result("a")}},
		{"an id reused later: the earlier is renamed", []bindings.ChatMessage{user("u"), calls("", "call-1-1"), result("call-1-1"), user("v"), calls("", "call-1-1", "call-h1-1"), result("call-1-1"), result("call-h1-1")},
			[]bindings.ChatMessage{user("u"), calls("", "call-h1-1x"), {Role: bindings.ChatTool, Content: "r-call-1-1", ToolCallID: "call-h1-1x"}, user("v"), calls("", "call-1-1", "call-h1-1"), result("call-1-1"), result("call-h1-1")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := c.out
			if want == nil {
				want = c.in
			}
			before := make([]bindings.ChatMessage, len(c.in))
			for i, m := range c.in {
				m.ToolCalls = append([]bindings.ToolCall(nil), m.ToolCalls...)
				before[i] = m
			}
			got := WellFormed(c.in)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if !IsWellFormed(got) {
				t.Errorf("the result is not well formed: %+v", got)
			}
			if d := cmp.Diff(before, c.in); d != "" {
				t.Errorf("the input was modified (-before +after):\n%s", d)
			}
		})
	}
}
