package turn

import (
	"strings"
	"testing"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/journalcodec/codectest"
)

// The every-field test of the journal codec (issue 22, point 3), on the
// types the turn journals: a value of each, every exported field filled
// by reflection, is written by the codec exactly as json.Marshal writes
// it and read back as json.Unmarshal reads it; in the plain fill the codec
// must take the value itself (codectest.Check). The codec compiles each
// type's fields from its reflection, so a field added to one of these
// types is journaled by construction; this holds it to encoding/json.

// codecCase is one journaled type: its name and its check in a fill mode.
type codecCase struct {
	name string
	run  func(t *testing.T, mode codectest.FillMode)
}

// caseOf is the codecCase of T; plain, when set, clears in the plain fill
// what the codec leaves to encoding/json by design.
func caseOf[T any](plain func(*T)) codecCase {
	return codecCase{name: codectest.Name[T](), run: func(t *testing.T, mode codectest.FillMode) {
		codectest.CheckAdjusted(t, mode, plain)
	}}
}

// codecCases are the types the turn journals: every step output, the
// stored messages and the run's input.
func codecCases() []codecCase {
	return []codecCase{
		caseOf[bindings.GenerateResponse](nil),
		caseOf[bindings.ConversationMessage](nil),
		caseOf[[]bindings.ChatMessage](nil),
		caseOf[toolResult](nil),
		caseOf[approvalOutcome](nil),
		caseOf[budgetState](nil),
		caseOf[setupState](nil),
		caseOf[[]callPlan](nil),
		caseOf[composeRecord](nil),
		caseOf[string](nil),
		caseOf[toolMeta](nil),
		caseOf(plainInput),
		caseOf[parkRecord](nil),
		caseOf[outputCheck](nil),
		caseOf[bindings.ApprovalRequest](nil),
		caseOf[[]RetrievedFact](nil),
		caseOf[[]GuardrailOutcome](nil),
		caseOf[*bindings.ProvenanceRecord](nil),
		caseOf[Result](nil),
		caseOf[childOutcome](nil),
		caseOf[handoffRecord](nil),
		caseOf[childPark](nil),
	}
}

// plainInput clears the model settings: a set omitzero struct is left to
// encoding/json (the codec does not call its IsZero method).
func plainInput(in *Input) { in.ModelSettings = bindings.ModelSettings{} }

// TestCodecRoundTripsEveryField is the every-field test: see above.
func TestCodecRoundTripsEveryField(t *testing.T) {
	for _, c := range codecCases() {
		for _, mode := range []codectest.FillMode{codectest.FillOdd, codectest.FillPlain} {
			t.Run(strings.ReplaceAll(c.name, "/", "_")+"/"+[...]string{"odd", "plain"}[mode], func(t *testing.T) {
				c.run(t, mode)
			})
		}
	}
}
