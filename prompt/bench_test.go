package prompt_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/prompt"
	"github.com/osteele/liquid"
)

// template2K is a realistic 2 KB system prompt: text, outputs with filters,
// a condition and a loop.
var template2K = func() string {
	var b strings.Builder
	b.WriteString("You are {{ agent.name }} ({{ agent.id }}@{{ agent.version }}), drafting contract clauses for {{ firmName | upcase }}.\n")
	b.WriteString("Today is {{ today }}; this is turn {{ conversation.turn }} of conversation {{ conversation.id }}.\n")
	b.WriteString("{% if jurisdiction %}Apply the law of {{ jurisdiction }}.{% else %}Ask which law applies.{% endif %}\n")
	b.WriteString("House rules:\n{% for rule in rules %}{{ forloop.index }}. {{ rule | capitalize }}\n{% endfor %}")
	for b.Len() < 2000 {
		b.WriteString("Write in plain English, cite the clause library by id, and never invent a statute. Keep {{ tone | default: 'formal' }} tone.\n")
	}
	return b.String()
}()

// benchRender benchmarks prompt.Render of a with c from the cache (warmed
// first) with benchCPU.
func benchRender(b *testing.B, a agent.Agent, c prompt.Context) {
	if _, err := prompt.Render(a, c); err != nil { // warm the cache
		b.Fatal(err)
	}
	benchCPU(b, func() error {
		_, err := prompt.Render(a, c)
		return err
	})
}

// benchCPU runs op b.N times, failing at its first error, and reports the
// thread CPU time per op as cpu-ns/op beside the allocations.
func benchCPU(b *testing.B, op func() error) {
	b.ReportAllocs()
	cpu := threadCPU(func() {
		for b.Loop() {
			if err := op(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

func BenchmarkRender2KCached(b *testing.B) {
	a := agent.Agent{
		ID: "acme.contract-drafter", Version: "1.0.0", Name: "Contract Drafter",
		Instructions: template2K,
		Parameters: []agent.PromptParameter{
			{Name: "firmName", Type: "string"},
			{Name: "jurisdiction", Type: "string", Optional: true},
			{Name: "tone", Type: "string", Default: "formal"},
			{Name: "rules", Type: "array"},
		},
	}
	c := prompt.Context{
		Parameters: map[string]any{
			"firmName": "Globex", "jurisdiction": "Delaware",
			"rules": []any{"be concise", "quote the clause id", "flag risky terms"},
		},
		Now: time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC), ConversationID: "c-1", Turn: 1,
	}
	b.SetBytes(int64(len(template2K)))
	benchRender(b, a, c)
}

// plainInstructions is a 315-character instruction without template tags.
var plainInstructions = strings.Repeat("You draft contract clauses. Cite the clause library by id. ", 6)[:315]

// BenchmarkRenderPlain: an instruction without template tags, from the
// cache.
func BenchmarkRenderPlain(b *testing.B) {
	a := agent.Agent{ID: "acme.plain", Version: "1.0.0", Name: "Plain", Instructions: plainInstructions,
		Parameters: []agent.PromptParameter{{Name: "firmName", Type: "string"}}}
	c := prompt.Context{Parameters: map[string]any{"firmName": "Globex"}, Now: time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)}
	benchRender(b, a, c)
}

// BenchmarkRender2KOsteele is the floor BenchmarkRender2KCached is compared
// with: osteele/liquid alone rendering the same template, parsed once,
// with the same values bound (what prompt.Render binds).
func BenchmarkRender2KOsteele(b *testing.B) {
	eng := liquid.NewEngine()
	eng.StrictVariables()
	tpl, err := eng.ParseString(template2K)
	if err != nil {
		b.Fatal(err)
	}
	vars := map[string]any{
		"firmName": "Globex", "jurisdiction": "Delaware", "tone": "formal",
		"rules": []any{"be concise", "quote the clause id", "flag risky terms"},
		"today": "2026-03-04", "now": "2026-03-04T09:00:00Z",
		"agent":        map[string]any{"id": "acme.contract-drafter", "name": "Contract Drafter", "version": "1.0.0"},
		"conversation": map[string]any{"id": "c-1", "turn": 1},
	}
	b.SetBytes(int64(len(template2K)))
	benchCPU(b, func() error {
		_, err := tpl.RenderString(vars)
		return err
	})
}

// BenchmarkRenderTextPlain: RenderText of the same 315-character
// instruction without template tags, what a turn renders: no parse, no
// render, no Result.Context; the required parameter's presence is still
// checked.
func BenchmarkRenderTextPlain(b *testing.B) {
	a := agent.Agent{ID: "acme.plain", Version: "1.0.0", Name: "Plain", Instructions: plainInstructions,
		Parameters: []agent.PromptParameter{{Name: "firmName", Type: "string"}}}
	c := prompt.Context{Parameters: map[string]any{"firmName": "Globex"}, Now: time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)}
	ctx := b.Context()
	benchCPU(b, func() error {
		if s, err := prompt.RenderText(ctx, a, c); err != nil || len(s) != len(plainInstructions) {
			return fmt.Errorf("RenderText = %q, %v", s, err)
		}
		return nil
	})
}
