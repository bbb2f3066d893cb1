package codes

import (
	"context"
	"fmt"

	agents "github.com/kindgi/agents"
)

// StepOutcome reports whether err, a step's error under the driver's ctx,
// is the step's own outcome, to be journaled as failed: a coded error
// other than the storage and lease errors (and not a driver fault), with
// ctx still live.
func StepOutcome(ctx context.Context, err error) bool {
	if ctx.Err() != nil || IsDriverFault(err) {
		return false
	}
	switch agents.CodeOf(err) {
	case "", agents.CodePersistence, agents.CodeRunBusy, agents.CodeRunJournalUnavailable,
		agents.CodeRunSnapshotMissing:
		return false
	}
	return true
}

// Panic is the kind of step a panic happened in (Panicked).
type Panic int

// The kinds of step Panicked tells apart.
const (
	PanicTool      Panic = iota // a tool call, or any other step
	PanicModel                  // a model call
	PanicGuardrail              // a guardrail check
)

// Panicked is the error a panic p in a step of kind k counts as:
// model-invocation (with the route's provider and model),
// guardrail-violation, or tool-invocation.
func Panicked(k Panic, provider, model string, p any) error {
	msg := fmt.Sprintf("the step panicked: %v", p)
	switch k {
	case PanicModel:
		return &agents.ModelInvocationError{Provider: provider, Model: model, Message: msg}
	case PanicGuardrail:
		return &agents.GuardrailViolationError{Reason: msg}
	}
	return &agents.ToolInvocationError{Message: msg}
}
