package schemacheck

import (
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// TestAnswerJSON pins what is taken of an answer: white space and a
// Markdown code fence (with or without a language tag) go.
func TestAnswerJSON(t *testing.T) {
	for in, want := range map[string]string{
		` {"a":1} `:                  `{"a":1}`,
		"```json\n{\"a\":1}\n```":    `{"a":1}`,
		"```\n[1]\n```":              `[1]`,
		"```{\"a\":1}```":            `{"a":1}`,
		"text ```json\n{}\n``` more": "text ```json\n{}\n``` more",
	} {
		if got := AnswerJSON(in); got != want {
			t.Errorf("AnswerJSON(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOutputCorrection pins the message that gives issues back.
func TestOutputCorrection(t *testing.T) {
	m := OutputCorrection([]agents.Issue{{Message: "not an object"}, {Path: "/n", Message: "missing"}})
	want := "Your answer is not valid against the required JSON Schema:\n- (root): not an object\n- /n: missing\nAnswer again with only the corrected JSON."
	if m.Role != bindings.ChatUser || m.Content != want {
		t.Errorf("OutputCorrection = %+v, want a user message %q", m, want)
	}
}
