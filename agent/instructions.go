package agent

import "github.com/kindgi/agents/internal/tmpl"

// Bounds of Spec.Instructions, checked by Define before the template is
// parsed (the parser's memory grows with the source and much faster with
// its nesting): at most MaxInstructionsBytes bytes (128 KiB), blocks
// ({% if %}, {% for %}, … inside one another) nested at most
// MaxInstructionsDepth (32) deep, and brackets ("(" and "[" inside one
// expression) at most MaxInstructionsBrackets (8) deep.
const (
	MaxInstructionsBytes    = tmpl.MaxSource
	MaxInstructionsDepth    = tmpl.MaxDepth
	MaxInstructionsBrackets = tmpl.MaxBrackets
)

// checkInstructionBounds returns the issue message for instructions past
// MaxInstructionsBytes, MaxInstructionsDepth or
// MaxInstructionsBrackets, or "".
func checkInstructionBounds(s string) string {
	if err := tmpl.CheckSource(s); err != nil {
		return "instructions are too large for a prompt template: " + err.Error() + "; split the text or flatten the nesting"
	}
	return ""
}
