package agent_test

import (
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/kindgi/agents/agent"
)

// TestInstructionBounds: Define refuses instructions past the documented
// size and nesting bounds, before parsing them, and accepts them at the
// bounds.
func TestInstructionBounds(t *testing.T) {
	nested := func(n int) string {
		return strings.Repeat("{% if x %}", n) + strings.Repeat("{% endif %}", n)
	}
	parens := func(n int) string {
		return "{{ " + strings.Repeat("(", n) + "x" + strings.Repeat(")", n) + " }}"
	}
	runRuleTests(t, []ruleTest{
		{"instructions/at-size-bound", func(s *agent.Spec) { s.Instructions = strings.Repeat("x", agent.MaxInstructionsBytes) }, nil, ""},
		{"instructions/past-size-bound", func(s *agent.Spec) { s.Instructions = strings.Repeat("x", agent.MaxInstructionsBytes+1) }, []string{"instructions"}, "exceeds 131072 bytes"},
		{"instructions/at-depth-bound", func(s *agent.Spec) { s.Instructions = nested(agent.MaxInstructionsDepth) }, nil, ""},
		{"instructions/past-depth-bound", func(s *agent.Spec) { s.Instructions = nested(agent.MaxInstructionsDepth + 1) }, []string{"instructions"}, "nest deeper than 32"},
		{"instructions/sibling-blocks", func(s *agent.Spec) { s.Instructions = strings.Repeat(nested(3), 100) }, nil, ""},
		{"instructions/at-bracket-bound", func(s *agent.Spec) { s.Instructions = parens(agent.MaxInstructionsBrackets) }, nil, ""},
		{"instructions/past-bracket-bound", func(s *agent.Spec) { s.Instructions = parens(agent.MaxInstructionsBrackets + 1) }, []string{"instructions"}, "brackets nest deeper than 8"},
		{"instructions/quoted-brackets", func(s *agent.Spec) { s.Instructions = `{{ "((((((((((((" | size }}` }, nil, ""},
	})
}

// TestInstructionBoundsBeforeParsing: a megabyte of nested parentheses
// (634–890 MiB to parse before the bound) is refused with a few MiB
// allocated.
func TestInstructionBoundsBeforeParsing(t *testing.T) {
	s := exampleSpec(t)
	s.Instructions = "{{ " + strings.Repeat("(", 1<<19) + "x" + strings.Repeat(")", 1<<19) + " }}"
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(sample)
	before := sample[0].Value.Uint64()
	_, err := agent.Define(s)
	metrics.Read(sample)
	allocated := sample[0].Value.Uint64() - before
	issues := issuesOf(t, err)
	if len(issues) != 1 || issues[0].Path != "instructions" || !strings.Contains(issues[0].Message, "exceeds") {
		t.Fatalf("issues = %v", issues)
	}
	if allocated > 16<<20 {
		t.Errorf("Define allocated %d MiB to refuse the instructions", allocated>>20)
	}
}
