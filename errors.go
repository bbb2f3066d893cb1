package agents

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Error codes. Every error the module returns carries one of these (or a
// code of the pack protocol, for errors of package pack); CodeOf reads it.
const (
	CodeInvalidAgent              = "invalid-agent"
	CodeAgentNotFound             = "agent-not-found"
	CodeAgentAlreadyRegistered    = "agent-already-registered"
	CodeAgentVersionMismatch      = "agent-version-mismatch"
	CodeConversationNotFound      = "conversation-not-found"
	CodeConversationClosed        = "conversation-closed"
	CodeInvalidMessage            = "invalid-message"
	CodePersistence               = "persistence-error"
	CodeMissingParameter          = "missing-parameter"
	CodeRenderFailure             = "render-failure"
	CodeUnresolvedTool            = "unresolved-tool"
	CodeToolVersionUnresolvable   = "tool-version-unresolvable"
	CodeCapabilityRoutingFailed   = "capability-routing-failed"
	CodeModelInvocationFailed     = "model-invocation-failed"
	CodeToolInvocationFailed      = "tool-invocation-failed"
	CodeBudgetExceeded            = "budget-exceeded"
	CodeTurnAborted               = "turn-aborted"
	CodeHitlRequired              = "hitl-required"
	CodeGuardrailViolation        = "guardrail-violation"
	CodeUnresolvedGuardrail       = "unresolved-guardrail"
	CodeTenantPolicyUnavailable   = "tenant-policy-unavailable"
	CodeRunSnapshotMissing        = "run-snapshot-missing"
	CodeRunJournalUnavailable     = "run-journal-unavailable"
	CodeRunBusy                   = "run-busy"
	CodeConversationBusy          = "conversation-busy"
	CodeMalformedEnvelope         = "malformed-envelope"
	CodeUnsupportedPayloadVersion = "unsupported-payload-version"
	CodeRunInputMismatch          = "run-input-mismatch"
	CodeStepAttemptsExhausted     = "step-attempts-exhausted"
	CodeApprovalNotFound          = "approval-not-found"
	CodeInvalidBindings           = "invalid-bindings"
	CodeInvalidOutput             = "invalid-output"
	CodeQuotaExceeded             = "quota-exceeded"
	CodeAgentDepthExceeded        = "agent-depth-exceeded"
)

// Budget kinds carried by BudgetExceededError.Kind.
const (
	BudgetSteps = "steps"
	BudgetCost  = "cost"
)

// Abort reasons carried by TurnAbortedError.Reason.
const (
	AbortExternal = "external"
	AbortTimeout  = "timeout"
)

// Coder is implemented by every error type of the module: Code returns the
// stable kebab-case code of the error.
type Coder interface {
	error
	Code() string
}

// CodeOf returns the stable code of err, looking through wrapping. It returns
// "" for nil and for errors that carry no code, except that a context
// cancellation or deadline maps to the turn's abort code, turn-aborted.
func CodeOf(err error) string {
	if err == nil {
		return ""
	}
	var c Coder
	if errors.As(err, &c) {
		return c.Code()
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return CodeTurnAborted
	}
	return ""
}

// Issue is one validation problem: Path locates the offending field with
// JSON names (tools[1].version), Message says what to change.
type Issue struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// String returns "path: message", or the message alone when the path is empty.
func (i Issue) String() string {
	if i.Path == "" {
		return i.Message
	}
	return i.Path + ": " + i.Message
}

// InvalidAgentError reports every problem agent.Define found in a spec.
type InvalidAgentError struct {
	Issues []Issue
}

// Error implements the error interface.
func (e *InvalidAgentError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid agent: %d issue", len(e.Issues))
	if len(e.Issues) != 1 {
		b.WriteByte('s')
	}
	for i, is := range e.Issues {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(is.String())
	}
	return b.String()
}

// Code returns invalid-agent.
func (e *InvalidAgentError) Code() string { return CodeInvalidAgent }

// AgentNotFoundError reports an agent id, or an id at a version, that is not
// registered. Version is "" when the latest version was asked for.
type AgentNotFoundError struct {
	ID      string
	Version string
}

// Error implements the error interface.
func (e *AgentNotFoundError) Error() string {
	if e.Version == "" {
		return fmt.Sprintf("agent %q not found", e.ID)
	}
	return fmt.Sprintf("agent %s@%s not found", e.ID, e.Version)
}

// Code returns agent-not-found.
func (e *AgentNotFoundError) Code() string { return CodeAgentNotFound }

// AgentAlreadyRegisteredError reports a second registration of an (id,
// version) pair.
type AgentAlreadyRegisteredError struct {
	ID      string
	Version string
}

// Error implements the error interface.
func (e *AgentAlreadyRegisteredError) Error() string {
	return fmt.Sprintf("agent %s@%s is already registered", e.ID, e.Version)
}

// Code returns agent-already-registered.
func (e *AgentAlreadyRegisteredError) Code() string { return CodeAgentAlreadyRegistered }

// AgentVersionMismatchError reports an agent used with a conversation or a
// run that is pinned to another id@version.
type AgentVersionMismatchError struct {
	// Subject is what the agent was checked against: "conversation ID" or
	// "run ID".
	Subject string
	// Expected is the id@version the subject is pinned to.
	Expected string
	// Actual is the id@version that was passed.
	Actual string
}

// Error implements the error interface.
func (e *AgentVersionMismatchError) Error() string {
	return fmt.Sprintf("agent version mismatch: %s is pinned to %s, got %s", e.Subject, e.Expected, e.Actual)
}

// Code returns agent-version-mismatch.
func (e *AgentVersionMismatchError) Code() string { return CodeAgentVersionMismatch }

// ConversationNotFoundError reports a conversation that does not exist for
// the tenant (it may exist for another tenant; that is not revealed).
type ConversationNotFoundError struct {
	ConversationID string
}

// Error implements the error interface.
func (e *ConversationNotFoundError) Error() string {
	return fmt.Sprintf("conversation %q not found", e.ConversationID)
}

// Code returns conversation-not-found.
func (e *ConversationNotFoundError) Code() string { return CodeConversationNotFound }

// ConversationClosedError reports a write to, or a turn on, a closed
// conversation. A closed conversation cannot be reopened.
type ConversationClosedError struct {
	ConversationID string
}

// Error implements the error interface.
func (e *ConversationClosedError) Error() string {
	return fmt.Sprintf("conversation %q is closed", e.ConversationID)
}

// Code returns conversation-closed.
func (e *ConversationClosedError) Code() string { return CodeConversationClosed }

// InvalidMessageError reports a message or binding input that breaks the
// binding's rules (an empty tenant id, an unknown role, …).
type InvalidMessageError struct {
	Reason string
}

// Error implements the error interface.
func (e *InvalidMessageError) Error() string { return "invalid message: " + e.Reason }

// Code returns invalid-message.
func (e *InvalidMessageError) Code() string { return CodeInvalidMessage }

// PersistenceError reports a storage failure. Op names the operation; Err is
// the cause.
//
// Permanent marks a deterministic refusal: the store will refuse the same
// write every time (a PostgreSQL data exception, a program limit, an
// integrity violation that is not the store's own idempotency check), so
// driving the run again cannot help and the turn ends the run as failed.
// A zero Permanent is a transient failure (a lost connection, a
// serialization failure, a deadlock, a timeout): the run stays resumable.
// IsRetryable reads it.
type PersistenceError struct {
	Op        string
	Err       error
	Permanent bool
}

// Error implements the error interface.
func (e *PersistenceError) Error() string {
	if e.Err == nil {
		return "persistence error: " + e.Op
	}
	return fmt.Sprintf("persistence error: %s: %v", e.Op, e.Err)
}

// Code returns persistence-error.
func (e *PersistenceError) Code() string { return CodePersistence }

// Unwrap returns the cause.
func (e *PersistenceError) Unwrap() error { return e.Err }

// MissingParameterError reports a required prompt parameter that was not
// given, or a template variable that resolves to nothing.
type MissingParameterError struct {
	Name string
}

// Error implements the error interface.
func (e *MissingParameterError) Error() string {
	return fmt.Sprintf("missing parameter %q", e.Name)
}

// Code returns missing-parameter.
func (e *MissingParameterError) Code() string { return CodeMissingParameter }

// RenderFailureError reports a template that failed to parse or render for
// any reason other than a missing variable, including the render bounds.
type RenderFailureError struct {
	Reason string
	Err    error
}

// Error implements the error interface.
func (e *RenderFailureError) Error() string { return "render failure: " + e.Reason }

// Code returns render-failure.
func (e *RenderFailureError) Code() string { return CodeRenderFailure }

// Unwrap returns the cause.
func (e *RenderFailureError) Unwrap() error { return e.Err }

// UnresolvedToolError reports a tool id the tenant's tool registry does not
// know.
type UnresolvedToolError struct {
	ToolID string
}

// Error implements the error interface.
func (e *UnresolvedToolError) Error() string {
	return fmt.Sprintf("tool %q is not registered for this tenant", e.ToolID)
}

// Code returns unresolved-tool.
func (e *UnresolvedToolError) Code() string { return CodeUnresolvedTool }

// ToolVersionUnresolvableError reports a tool range no registered version
// satisfies. Available lists the versions that exist, highest first.
// Reason is set when Range is not a valid range at all, and says why.
type ToolVersionUnresolvableError struct {
	ToolID    string
	Range     string
	Available []string
	Reason    string
}

// Error implements the error interface.
func (e *ToolVersionUnresolvableError) Error() string {
	name := e.ToolID
	if name == "" {
		name = "tool"
	}
	if e.Reason != "" {
		return fmt.Sprintf("%s: invalid version range %q: %s", name, e.Range, e.Reason)
	}
	if len(e.Available) == 0 {
		return fmt.Sprintf("%s: no version satisfies %q (no versions exist)", name, e.Range)
	}
	return fmt.Sprintf("%s: no version satisfies %q (available: %s)", name, e.Range, strings.Join(e.Available, ", "))
}

// Code returns tool-version-unresolvable.
func (e *ToolVersionUnresolvableError) Code() string { return CodeToolVersionUnresolvable }

// RoutingRefusal says why one provider/model candidate was refused.
type RoutingRefusal struct {
	Provider string
	Model    string
	Reason   string
}

// CapabilityRoutingError reports that no provider and model could serve the
// agent's capability under the merged policy. Refusals names every candidate
// and why it was refused.
type CapabilityRoutingError struct {
	Reason   string
	Refusals []RoutingRefusal
}

// Error implements the error interface.
func (e *CapabilityRoutingError) Error() string {
	var b strings.Builder
	b.WriteString("capability routing failed")
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	for i, r := range e.Refusals {
		if i == 0 {
			b.WriteString(" (")
		} else {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s/%s: %s", r.Provider, r.Model, r.Reason)
		if i == len(e.Refusals)-1 {
			b.WriteString(")")
		}
	}
	return b.String()
}

// Code returns capability-routing-failed.
func (e *CapabilityRoutingError) Code() string { return CodeCapabilityRoutingFailed }

// ModelInvocationError reports a failed model call. Status is the HTTP
// status for HTTP providers (0 otherwise).
type ModelInvocationError struct {
	Provider string
	Model    string
	Status   int
	Message  string
	Err      error
}

// Error implements the error interface.
func (e *ModelInvocationError) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Status != 0 {
		return fmt.Sprintf("model %s/%s failed (HTTP %d): %s", e.Provider, e.Model, e.Status, msg)
	}
	return fmt.Sprintf("model %s/%s failed: %s", e.Provider, e.Model, msg)
}

// Code returns model-invocation-failed.
func (e *ModelInvocationError) Code() string { return CodeModelInvocationFailed }

// Unwrap returns the cause.
func (e *ModelInvocationError) Unwrap() error { return e.Err }

// ToolInvocationError reports a tool call that failed outside the model's
// control (the binding failed, the output broke its schema, …). A tool that
// fails on bad arguments is reported back to the model instead.
type ToolInvocationError struct {
	ToolID      string
	ToolVersion string
	Message     string
	Err         error
}

// Error implements the error interface.
func (e *ToolInvocationError) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("tool %s@%s failed: %s", e.ToolID, e.ToolVersion, msg)
}

// Code returns tool-invocation-failed.
func (e *ToolInvocationError) Code() string { return CodeToolInvocationFailed }

// Unwrap returns the cause.
func (e *ToolInvocationError) Unwrap() error { return e.Err }

// BudgetExceededError reports a turn stopped by its budget. Kind is
// BudgetSteps or BudgetCost.
type BudgetExceededError struct {
	Kind  string
	Limit float64
	Used  float64
}

// Error implements the error interface.
func (e *BudgetExceededError) Error() string {
	return fmt.Sprintf("%s budget exceeded: used %g of %g", e.Kind, e.Used, e.Limit)
}

// Code returns budget-exceeded.
func (e *BudgetExceededError) Code() string { return CodeBudgetExceeded }

// TurnAbortedError reports a turn stopped before it finished. Reason is
// AbortExternal (the context was cancelled) or AbortTimeout (maxWallMs).
type TurnAbortedError struct {
	Reason string
	Err    error
}

// Error implements the error interface.
func (e *TurnAbortedError) Error() string { return "turn aborted: " + e.Reason }

// Code returns turn-aborted.
func (e *TurnAbortedError) Code() string { return CodeTurnAborted }

// Unwrap returns the cause.
func (e *TurnAbortedError) Unwrap() error { return e.Err }

// HitlRequiredError reports a call that needs a human approval which cannot
// be asked for or was not granted (no HITL binding, approval still pending,
// approval expired with a fail outcome).
type HitlRequiredError struct {
	ToolID     string
	ApprovalID string
	Reason     string
}

// Error implements the error interface.
func (e *HitlRequiredError) Error() string {
	s := "human approval required"
	if e.ToolID != "" {
		s += " for " + e.ToolID
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// Code returns hitl-required.
func (e *HitlRequiredError) Code() string { return CodeHitlRequired }

// GuardrailViolationError reports a failed guardrail check whose action is
// halt; the response was not written.
type GuardrailViolationError struct {
	GuardrailID string
	Reason      string
}

// Error implements the error interface.
func (e *GuardrailViolationError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("guardrail %q violated", e.GuardrailID)
	}
	return fmt.Sprintf("guardrail %q violated: %s", e.GuardrailID, e.Reason)
}

// Code returns guardrail-violation.
func (e *GuardrailViolationError) Code() string { return CodeGuardrailViolation }

// UnresolvedGuardrailError reports a guardrail id (or its check) that no
// binding knows.
type UnresolvedGuardrailError struct {
	GuardrailID string
	Reason      string
}

// Error implements the error interface.
func (e *UnresolvedGuardrailError) Error() string {
	s := fmt.Sprintf("guardrail %q could not be resolved", e.GuardrailID)
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// Code returns unresolved-guardrail.
func (e *UnresolvedGuardrailError) Code() string { return CodeUnresolvedGuardrail }

// TenantPolicyUnavailableError reports a tenant policy the turn must apply
// that could not be evaluated, so the turn fails rather than run without it.
type TenantPolicyUnavailableError struct {
	PolicyKind string
	Err        error
}

// Error implements the error interface.
func (e *TenantPolicyUnavailableError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("tenant policy %q unavailable", e.PolicyKind)
	}
	return fmt.Sprintf("tenant policy %q unavailable: %v", e.PolicyKind, e.Err)
}

// Code returns tenant-policy-unavailable.
func (e *TenantPolicyUnavailableError) Code() string { return CodeTenantPolicyUnavailable }

// Unwrap returns the cause.
func (e *TenantPolicyUnavailableError) Unwrap() error { return e.Err }

// RunSnapshotMissingError reports a run with no stored snapshot.
type RunSnapshotMissingError struct {
	RunID string
}

// Error implements the error interface.
func (e *RunSnapshotMissingError) Error() string {
	return fmt.Sprintf("run %q has no snapshot", e.RunID)
}

// Code returns run-snapshot-missing.
func (e *RunSnapshotMissingError) Code() string { return CodeRunSnapshotMissing }

// RunJournalUnavailableError reports a run journal that cannot be read (or
// found, or folded).
type RunJournalUnavailableError struct {
	RunID string
	Err   error
}

// Error implements the error interface.
func (e *RunJournalUnavailableError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("journal of run %q unavailable", e.RunID)
	}
	return fmt.Sprintf("journal of run %q unavailable: %v", e.RunID, e.Err)
}

// Code returns run-journal-unavailable.
func (e *RunJournalUnavailableError) Code() string { return CodeRunJournalUnavailable }

// Unwrap returns the cause.
func (e *RunJournalUnavailableError) Unwrap() error { return e.Err }

// RunBusyError reports a write or lease refused because the caller does
// not hold the run's lease: the write was not made.
//
// Usually another driver holds the lease (Owner names it when the store
// knows it). LeaseExpired says instead that the refused driver's own lease
// expired — it stalled past its TTL between renewals — and no other driver
// holds the run: nobody else is driving it, and it can be driven again.
// Both are code run-busy and retryable.
type RunBusyError struct {
	RunID string
	Owner string
	// LeaseExpired is set when the caller's lease expired and no other
	// owner holds an unexpired one.
	LeaseExpired bool
}

// Error implements the error interface.
func (e *RunBusyError) Error() string {
	if e.LeaseExpired {
		return fmt.Sprintf("run %q: this driver's lease expired before its write (no other process holds it)", e.RunID)
	}
	return fmt.Sprintf("run %q is being driven by another process", e.RunID)
}

// Code returns run-busy.
func (e *RunBusyError) Code() string { return CodeRunBusy }

// ConversationBusyError reports a user message appended under a turn number
// that another turn of the conversation already holds: two turns invoked at
// once picked the same number, and the other one stored its user message
// first. Nothing was stored. Retry the turn: a new Invoke gets the next
// number.
type ConversationBusyError struct {
	ConversationID string
	TurnNumber     int
}

// Error implements the error interface.
func (e *ConversationBusyError) Error() string {
	return fmt.Sprintf("conversation %q is busy: another turn holds turn number %d", e.ConversationID, e.TurnNumber)
}

// Code returns conversation-busy.
func (e *ConversationBusyError) Code() string { return CodeConversationBusy }

// EnvelopeError is implemented by the errors of reading a {v, doc} JSONB
// envelope: *MalformedEnvelopeError and *UnsupportedPayloadVersionError.
type EnvelopeError interface {
	Coder
	envelopeError()
}

// MalformedEnvelopeError reports a stored payload that is not a {v, doc}
// envelope.
type MalformedEnvelopeError struct {
	Reason string
}

// Error implements the error interface.
func (e *MalformedEnvelopeError) Error() string { return "malformed envelope: " + e.Reason }

// Code returns malformed-envelope.
func (e *MalformedEnvelopeError) Code() string   { return CodeMalformedEnvelope }
func (e *MalformedEnvelopeError) envelopeError() {}

// UnsupportedPayloadVersionError reports an envelope written by a newer (or
// unknown) payload version.
type UnsupportedPayloadVersionError struct {
	Version   int
	Supported int
}

// Error implements the error interface.
func (e *UnsupportedPayloadVersionError) Error() string {
	return fmt.Sprintf("unsupported payload version %d (this build reads up to %d)", e.Version, e.Supported)
}

// Code returns unsupported-payload-version.
func (e *UnsupportedPayloadVersionError) Code() string   { return CodeUnsupportedPayloadVersion }
func (e *UnsupportedPayloadVersionError) envelopeError() {}

// RunInputMismatchError reports an Invoke whose run id an earlier turn used
// with another input (tenant, project, conversation, agent id@version, user
// message, parameters or participant): a run id never answers another
// input. Nothing was stored or called. Field names the first input field
// that differs.
type RunInputMismatchError struct {
	RunID string
	Field string
}

// Error implements the error interface.
func (e *RunInputMismatchError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("run %q was started with another input", e.RunID)
	}
	return fmt.Sprintf("run %q was started with another input (%s differs)", e.RunID, e.Field)
}

// Code returns run-input-mismatch.
func (e *RunInputMismatchError) Code() string { return CodeRunInputMismatch }

// StepAttemptsExhaustedError reports a model or tool step that was started
// Attempts times without a stored result: the run is failed instead of
// calling again, since a failure that recurs on every drive would otherwise
// call (and bill) the model or tool for ever.
type StepAttemptsExhaustedError struct {
	RunID    string
	StepKey  string
	Attempts int
}

// Error implements the error interface.
func (e *StepAttemptsExhaustedError) Error() string {
	return fmt.Sprintf("run %q: step %q was started %d times without a stored result", e.RunID, e.StepKey, e.Attempts)
}

// Code returns step-attempts-exhausted.
func (e *StepAttemptsExhaustedError) Code() string { return CodeStepAttemptsExhausted }

// QuotaExceededError reports a tenant quota (bindings.Quota) that refused a
// unit of use: Quota is the quota's name, RetryAfter how long until its
// sliding window frees enough for the unit (zero when it never will, as
// for a unit larger than the limit).
//
// With the quota's onExceeded "fail" it is the turn's outcome: the run is
// failed with this code before the refused call. With "wait" the run is
// not failed: it goes back to queued until the window frees, and a worker
// continues it (turn.Wait waits for it). It is not retryable in either
// case (IsRetryable is false): a failed run replays the same error, and a
// waiting run goes on by itself; a caller who wants to try a new turn
// waits RetryAfter first.
type QuotaExceededError struct {
	Quota      string
	RetryAfter time.Duration
}

// Error implements the error interface.
func (e *QuotaExceededError) Error() string {
	if e.RetryAfter <= 0 {
		return fmt.Sprintf("quota %q exceeded", e.Quota)
	}
	return fmt.Sprintf("quota %q exceeded: retry after %s", e.Quota, e.RetryAfter)
}

// Code returns quota-exceeded.
func (e *QuotaExceededError) Code() string { return CodeQuotaExceeded }

// AgentDepthExceededError reports a sub-agent call or a handoff that would
// nest agents deeper than the turn's bound (turn.Bindings.MaxAgentDepth):
// AgentID is the agent it would have started, Depth the depth it would
// have run at, and Max the bound. Nothing runs; the model is told so as
// the call's tool error. It is not retryable.
type AgentDepthExceededError struct {
	AgentID string
	Depth   int
	Max     int
}

// Error implements the error interface.
func (e *AgentDepthExceededError) Error() string {
	return fmt.Sprintf("agent %q would run at depth %d, past the bound of %d", e.AgentID, e.Depth, e.Max)
}

// Code returns agent-depth-exceeded.
func (e *AgentDepthExceededError) Code() string { return CodeAgentDepthExceeded }

// ApprovalNotFoundError reports an approval id the tenant has no approval
// under.
type ApprovalNotFoundError struct {
	ApprovalID string
}

// Error implements the error interface.
func (e *ApprovalNotFoundError) Error() string {
	return fmt.Sprintf("approval %q not found", e.ApprovalID)
}

// Code returns approval-not-found.
func (e *ApprovalNotFoundError) Code() string { return CodeApprovalNotFound }

// InvalidBindingsError reports bindings that are missing or contradict each
// other for what the call needs (no run store, an agent with gated tools
// and no HITL binding, …). It is found before any side effect.
type InvalidBindingsError struct {
	Reason string
}

// Error implements the error interface.
func (e *InvalidBindingsError) Error() string { return "invalid bindings: " + e.Reason }

// Code returns invalid-bindings.
func (e *InvalidBindingsError) Code() string { return CodeInvalidBindings }

// InvalidOutputError reports a final answer that is not JSON valid against
// the agent's output schema, after the model was given one chance to fix
// it. Issues says what is wrong, with JSON-pointer-like paths.
type InvalidOutputError struct {
	Issues []Issue
}

// Error implements the error interface.
func (e *InvalidOutputError) Error() string {
	if len(e.Issues) == 0 {
		return "invalid output"
	}
	var b strings.Builder
	b.WriteString("invalid output: ")
	for i, is := range e.Issues {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(is.String())
	}
	return b.String()
}

// Code returns invalid-output.
func (e *InvalidOutputError) Code() string { return CodeInvalidOutput }

// IsRetryable reports whether driving a run again (Resume, or a worker's
// next claim) can help after err. It is the one predicate hosts and workers
// use, in the manner of pgconn.SafeToRetry:
//
//   - an error in the chain with a Retryable() bool method decides;
//   - a *PersistenceError is retryable unless it is Permanent (transient
//     storage failures: lost connections, serialization failures,
//     deadlocks, timeouts, cancelled statements);
//   - run-busy is retryable (another driver holds the run's lease; it may
//     lapse);
//   - everything else is not: a coded outcome of the turn (a model or tool
//     failure after its own retries, a budget, a guardrail, an abort, a
//     mismatch, exhausted attempts) is final and journaled, and driving the
//     run again returns it again. A nil error is not retryable.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	var r interface{ Retryable() bool }
	if errors.As(err, &r) {
		return r.Retryable()
	}
	var pe *PersistenceError
	if errors.As(err, &pe) {
		return !pe.Permanent
	}
	var busy *RunBusyError
	return errors.As(err, &busy)
}
