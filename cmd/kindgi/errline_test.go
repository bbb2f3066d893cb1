package main

import (
	"bytes"
	"errors"
	"strings"
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

// TestUsageErrorsStandOnTheirOwnLine: a command-line mistake prints its
// error as the first line, then a blank line, then the usage, whether the
// command found it or the flag package did; --help prints the usage alone.
func TestUsageErrorsStandOnTheirOwnLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"approvals", "approve", "--database-url", "postgres://nowhere", "--tenant", "acme", "ap-1"}, "kindgi approvals approve: --approver is required"},
		{[]string{"runs", "show", "--database-url", "postgres://nowhere", "--tenant", "acme"}, "kindgi runs show: give one RUN_ID"},
		{[]string{"validate"}, "kindgi validate: no files given"},
		{[]string{"validate", "--bogus", "x.yaml"}, "flag provided but not defined: -bogus"},
		{[]string{"prune", "--older-than", "soon"}, `invalid value "soon" for flag -older-than: parse error`},
	} {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), c.args, &stdout, &stderr)
		lines := strings.SplitN(stderr.String(), "\n", 4)
		if code != exitUsage || len(lines) < 3 || lines[0] != c.want || lines[1] != "" || !strings.HasPrefix(lines[2], "usage: kindgi ") {
			t.Errorf("kindgi %v: exit %d, stderr begins %q; want exit 2 and %q, a blank line, the usage", c.args, code, lines, c.want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"validate", "--help"}, &stdout, &stderr); code != exitOK || !strings.HasPrefix(stderr.String(), "usage: kindgi validate") {
		t.Errorf("validate --help: exit %d, stderr %q; want the usage first", code, stderr.String())
	}
}
