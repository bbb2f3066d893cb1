package drive

import (
	"encoding/json"
	"errors"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// A failed step journals its error as a StepError and a detail from which
// DecodeFailure rebuilds the typed error, so that errors.As and
// agents.CodeOf see the same error on every replay.

// failureDetail is the JSON stored in a failed entry's Output: the error's
// exported fields (Detail) and the text of its cause.
type failureDetail struct {
	Detail json.RawMessage `json:"detail,omitempty"`
	Cause  string          `json:"cause,omitempty"`
}

// EncodeFailure turns a coded error into a StepError and the detail that
// DecodeFailure rebuilds the typed error from.
func EncodeFailure(err error) (*bindings.StepError, json.RawMessage) {
	se := &bindings.StepError{Code: agents.CodeOf(err), Message: err.Error()}
	var c agents.Coder
	if !errors.As(err, &c) {
		return se, nil
	}
	var fd failureDetail
	if raw, mErr := json.Marshal(c); mErr == nil {
		var fields map[string]json.RawMessage
		if json.Unmarshal(raw, &fields) == nil {
			delete(fields, "Err")
			fd.Detail, _ = json.Marshal(fields)
		}
	}
	if cause := errors.Unwrap(c); cause != nil {
		fd.Cause = cause.Error()
	}
	out, _ := json.Marshal(fd)
	return se, out
}

// DecodeFailure rebuilds the typed error a failed entry recorded, so that
// errors.As and agents.CodeOf see the same error on every replay.
func DecodeFailure(e *bindings.JournalEntry) error {
	se := e.Error
	if se == nil {
		se = &bindings.StepError{Code: agents.CodePersistence, Message: "failed step " + e.Key + " recorded no error"}
	}
	var fd failureDetail
	_ = json.Unmarshal(e.Output, &fd)
	var cause error
	if fd.Cause != "" {
		cause = errors.New(fd.Cause)
	}
	target := newCoded(se.Code, cause)
	if target == nil {
		return &replayedError{code: se.Code, msg: se.Message}
	}
	if len(fd.Detail) > 0 {
		if err := json.Unmarshal(fd.Detail, target); err != nil {
			return &replayedError{code: se.Code, msg: se.Message}
		}
	}
	return target
}

// newCoded returns a zero error of the type that carries code, with its
// cause set, or nil for a code it does not know.
func newCoded(code string, cause error) error {
	switch code {
	case agents.CodeInvalidAgent:
		return &agents.InvalidAgentError{}
	case agents.CodeAgentVersionMismatch:
		return &agents.AgentVersionMismatchError{}
	case agents.CodeConversationNotFound:
		return &agents.ConversationNotFoundError{}
	case agents.CodeConversationClosed:
		return &agents.ConversationClosedError{}
	case agents.CodeConversationBusy:
		return &agents.ConversationBusyError{}
	case agents.CodeInvalidMessage:
		return &agents.InvalidMessageError{}
	case agents.CodeMissingParameter:
		return &agents.MissingParameterError{}
	case agents.CodeRenderFailure:
		return &agents.RenderFailureError{Err: cause}
	case agents.CodeUnresolvedTool:
		return &agents.UnresolvedToolError{}
	case agents.CodeToolVersionUnresolvable:
		return &agents.ToolVersionUnresolvableError{}
	case agents.CodeCapabilityRoutingFailed:
		return &agents.CapabilityRoutingError{}
	case agents.CodeModelInvocationFailed:
		return &agents.ModelInvocationError{Err: cause}
	case agents.CodeToolInvocationFailed:
		return &agents.ToolInvocationError{Err: cause}
	case agents.CodeBudgetExceeded:
		return &agents.BudgetExceededError{}
	case agents.CodeTurnAborted:
		return &agents.TurnAbortedError{Err: cause}
	case agents.CodeHitlRequired:
		return &agents.HitlRequiredError{}
	case agents.CodeGuardrailViolation:
		return &agents.GuardrailViolationError{}
	case agents.CodeUnresolvedGuardrail:
		return &agents.UnresolvedGuardrailError{}
	case agents.CodeTenantPolicyUnavailable:
		return &agents.TenantPolicyUnavailableError{Err: cause}
	case agents.CodeRunInputMismatch:
		return &agents.RunInputMismatchError{}
	case agents.CodeStepAttemptsExhausted:
		return &agents.StepAttemptsExhaustedError{}
	case agents.CodePersistence:
		return &agents.PersistenceError{Err: cause}
	case agents.CodeInvalidOutput:
		return &agents.InvalidOutputError{}
	case agents.CodeInvalidBindings:
		return &agents.InvalidBindingsError{}
	case agents.CodeApprovalNotFound:
		return &agents.ApprovalNotFoundError{}
	case agents.CodeQuotaExceeded:
		return &agents.QuotaExceededError{}
	}
	return nil
}

// replayedError is a recorded failure whose code has no type of its own.
type replayedError struct {
	code, msg string
}

// Error returns the recorded message.
func (e *replayedError) Error() string { return e.msg }

// Code returns the recorded code.
func (e *replayedError) Code() string { return e.code }
