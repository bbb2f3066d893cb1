package prompt_test

import (
	"errors"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/prompt"
)

// FuzzRender renders arbitrary template text with one string parameter p.
// It must never panic, and every failure must be one of the two documented
// error types.
func FuzzRender(f *testing.F) {
	seeds := []string{
		"You draft contract clauses for {{ firmName }}. Today is {{ today }}.",
		"{{ p | upcase | append: p }}",
		"{% for i in (1..3) %}{{ i }}{% endfor %}",
		"{% if p == 'x' %}a{% elsif q %}b{% else %}c{% endif %}",
		"{% assign s = p | split: '' %}{% for c in s reversed %}{{ c }}{% endfor %}",
		"{% capture c %}{{ p }}{% endcapture %}{{ c | size }}",
		"{% raw %}{{ {% endraw %}",
		"{{ agent.id }} {{ conversation.turn | plus: 1 }}",
		"{% case p %}{% when 'a', 'b' %}x{% endcase %}",
		"{{ p | truncate: 3 | escape | default: 'z' }}",
		"{% tablerow i in (1..4) cols: 2 %}{{ i }}{% endtablerow %}",
		"{{ (1..5) | join: ',' }}{{ p.size }}{{ p[0] }}",
		"{{", "{%", "{{}}", "{% %}", "{{ 'a }}",
	}
	for _, s := range seeds {
		f.Add(s, "x")
	}
	f.Fuzz(func(t *testing.T, instructions, p string) {
		a := agent.Agent{
			ID: "fuzz", Version: "1.0.0", Name: "Fuzz", Instructions: instructions,
			Parameters: []agent.PromptParameter{{Name: "p", Type: "string"}},
		}
		res, err := prompt.Render(a, prompt.Context{Parameters: map[string]any{"p": p}})
		if err == nil {
			if len(res.Text) > 1<<20 {
				t.Fatalf("output of %d bytes passed the 1 MiB bound", len(res.Text))
			}
			return
		}
		var mp *agents.MissingParameterError
		var rf *agents.RenderFailureError
		switch {
		case errors.As(err, &mp):
			if mp.Name == "" {
				t.Fatalf("MissingParameterError without a name for %q", instructions)
			}
		case errors.As(err, &rf):
		default:
			t.Fatalf("error %T %v is neither missing-parameter nor render-failure", err, err)
		}
	})
}
