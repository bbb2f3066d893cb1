package agents_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	agents "github.com/kindgi/agents"
)

type retryableErr bool

func (r retryableErr) Error() string   { return "custom" }
func (r retryableErr) Retryable() bool { return bool(r) }

func TestIsRetryable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain error", errors.New("x"), false},
		{"transient persistence", &agents.PersistenceError{Op: "append", Err: errors.New("conn reset")}, true},
		{"wrapped transient persistence", fmt.Errorf("drive: %w", &agents.PersistenceError{Op: "append"}), true},
		{"permanent persistence", &agents.PersistenceError{Op: "append", Permanent: true}, false},
		{"run busy", &agents.RunBusyError{RunID: "r"}, true},
		{"journal unavailable over transient storage", &agents.RunJournalUnavailableError{RunID: "r", Err: &agents.PersistenceError{Op: "read"}}, true},
		{"journal unavailable, undecodable", &agents.RunJournalUnavailableError{RunID: "r", Err: errors.New("fold")}, false},
		{"model failure", &agents.ModelInvocationError{}, false},
		{"aborted", &agents.TurnAbortedError{Reason: agents.AbortExternal, Err: context.Canceled}, false},
		{"mismatch", &agents.RunInputMismatchError{RunID: "r"}, false},
		{"attempts exhausted", &agents.StepAttemptsExhaustedError{RunID: "r", StepKey: "k", Attempts: 5}, false},
		{"own predicate true", fmt.Errorf("w: %w", retryableErr(true)), true},
		{"own predicate false over persistence", &agents.PersistenceError{Err: retryableErr(false)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := agents.IsRetryable(tt.err); got != tt.want {
				t.Errorf("IsRetryable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestNewCodes(t *testing.T) {
	for err, want := range map[error]string{
		&agents.RunInputMismatchError{RunID: "r"}:       "run-input-mismatch",
		&agents.StepAttemptsExhaustedError{RunID: "r"}:  "step-attempts-exhausted",
		&agents.ApprovalNotFoundError{ApprovalID: "a"}:  "approval-not-found",
		&agents.InvalidBindingsError{Reason: "no runs"}: "invalid-bindings",
		&agents.InvalidOutputError{}:                    "invalid-output",
	} {
		if got := agents.CodeOf(fmt.Errorf("w: %w", err)); got != want {
			t.Errorf("CodeOf(%T) = %q, want %q", err, got, want)
		}
	}
}
