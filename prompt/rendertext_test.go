package prompt_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/prompt"
)

// RenderText renders what Render renders, with or without template tags,
// and fails as it does when a required parameter is absent.
func TestRenderTextMatchesRender(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	required := agent.PromptParameter{Name: "firm"}
	cases := []struct {
		name   string
		text   string
		params map[string]any
		decl   []agent.PromptParameter
	}{
		{"plain", "You are a contract assistant.", nil, nil},
		{"whitespace and newlines", "  line one\r\n\tline two  \n\n  ", nil, nil},
		{"unicode", "Réponds en français — «court» ✓", nil, nil},
		{"percent and angle brackets", "100% sure <b>bold</b> & (x) [y]", nil, nil},
		{"empty", "", nil, nil},
		{"tags", "Hello {{ agent.name }} on turn {{ conversation.turn }}", nil, nil},
		{"raw braces", "a } b { c", nil, nil},
		{"required given", "Plain text.", map[string]any{"firm": "Acme"}, []agent.PromptParameter{required}},
		{"required missing", "Plain text.", nil, []agent.PromptParameter{required}},
		{"required missing with tags", "{{ firm }}", nil, []agent.PromptParameter{required}},
		{"optional missing", "Plain text.", nil, []agent.PromptParameter{{Name: "firm", Optional: true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := testAgent(tc.text, tc.decl...)
			c := prompt.Context{Parameters: tc.params, Now: now, ConversationID: "conv-1", Turn: 2}
			want, werr := prompt.RenderContext(t.Context(), a, c)
			got, gerr := prompt.RenderText(t.Context(), a, c)
			if (werr == nil) != (gerr == nil) || agents.CodeOf(werr) != agents.CodeOf(gerr) {
				t.Fatalf("RenderText error = %v, RenderContext error = %v", gerr, werr)
			}
			var mp *agents.MissingParameterError
			if werr != nil && errors.As(werr, &mp) {
				var gp *agents.MissingParameterError
				if !errors.As(gerr, &gp) || gp.Name != mp.Name {
					t.Fatalf("RenderText error = %v, want missing %q", gerr, mp.Name)
				}
			}
			if got != want.Text {
				t.Fatalf("RenderText = %q, RenderContext = %q", got, want.Text)
			}
		})
	}
}

// RenderText of instructions without tags allocates nothing.
func TestRenderTextPlainAllocatesNothing(t *testing.T) {
	a := testAgent(strings.Repeat("Plain instructions. ", 16))
	c := prompt.Context{ConversationID: "conv-1", Turn: 1}
	ctx := t.Context()
	n := testing.AllocsPerRun(100, func() {
		if s, err := prompt.RenderText(ctx, a, c); err != nil || s != a.Instructions {
			t.Fatal(s, err)
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per render, want 0", n)
	}
}
