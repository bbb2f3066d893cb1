package codes

import (
	"errors"

	agents "github.com/kindgi/agents"
)

// EndsRun reports whether err, a drive's error that no step journaled,
// is the run's final outcome: any error that agents.IsRetryable refuses
// (a value the store refuses, a broken output), except those of the
// driving process rather than the run (DriverFault) and those that say
// the run must wait (an approval still pending) or cannot be read here.
func EndsRun(err error) bool {
	if agents.IsRetryable(err) || DriverFault(err) {
		return false
	}
	switch agents.CodeOf(err) {
	case "", agents.CodeHitlRequired, agents.CodeRunJournalUnavailable, agents.CodeRunSnapshotMissing:
		return false
	}
	return true
}

// DriverFaultError marks a step's failure that belongs to the driving
// process rather than the run (a tool the run resolved that this
// process's registry lacks): the step journals no outcome and counts no
// attempt, so another process may run it. Its code is its cause's.
type DriverFaultError struct{ Err error }

// Error returns the cause's message.
func (e *DriverFaultError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *DriverFaultError) Unwrap() error { return e.Err }

// IsDriverFault reports whether a step's err is a *DriverFaultError.
func IsDriverFault(err error) bool {
	var df *DriverFaultError
	return errors.As(err, &df)
}

// DriverFault reports whether err, when no step journaled it, is a
// failure of the driving process rather than of the run: its bindings
// lack the provider the run was routed to, a tool the run resolved, the
// run's agent or its approvals (a HITL binding that does not know them).
// Another process may drive the run, so it does not end it (a Worker
// bounds such drives: WorkerOptions.MaxDriveAttempts).
func DriverFault(err error) bool {
	switch agents.CodeOf(err) {
	case agents.CodeCapabilityRoutingFailed, agents.CodeUnresolvedTool, agents.CodeToolVersionUnresolvable,
		agents.CodeInvalidBindings, agents.CodeAgentNotFound, agents.CodeAgentVersionMismatch, agents.CodeApprovalNotFound:
		return true
	}
	return false
}

// HandoffRefusal reports whether err, met while deciding a handoff's
// target, is the target's own (its configuration or the tenant's
// registry: told to the model as the call's error) rather than a failure
// of a binding or the drive (which ends the drive, the run resumable).
func HandoffRefusal(err error) bool {
	switch agents.CodeOf(err) {
	case agents.CodeMissingParameter, agents.CodeRenderFailure, agents.CodeAgentNotFound, agents.CodeAgentVersionMismatch,
		agents.CodeUnresolvedTool, agents.CodeToolVersionUnresolvable, agents.CodeUnresolvedGuardrail,
		agents.CodeCapabilityRoutingFailed, agents.CodeInvalidBindings:
		return true
	}
	return false
}
