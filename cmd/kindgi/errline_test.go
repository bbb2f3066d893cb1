package main

import (
	"errors"
	"testing"

	agents "github.com/kindgi/agents"
)

func TestErrLineNamesTheCodeOnce(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&agents.PersistenceError{Op: "connect", Err: errors.New("refused")}, "persistence-error: connect: refused"},
		{&agents.PersistenceError{Op: "connect"}, "persistence-error: connect"},
		{&agents.InvalidBindingsError{Reason: "no run store"}, "invalid-bindings: no run store"},
		{&agents.MissingParameterError{Name: "firmName"}, `missing-parameter: "firmName"`},
		{&agents.ApprovalNotFoundError{ApprovalID: "ap"}, `approval-not-found: approval "ap" not found`},
		{&agents.TurnAbortedError{Reason: agents.AbortTimeout}, "turn-aborted: timeout"},
		{errors.New("plain"), "plain"},
	} {
		if got := errLine(c.err); got != c.want {
			t.Errorf("errLine(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
