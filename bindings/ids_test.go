package bindings_test

import (
	"strings"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

func TestCheckID(t *testing.T) {
	ok := []string{"t1", "acme.tenant-7", strings.Repeat("x", bindings.MaxIDLength), "日本"}
	for _, id := range ok {
		if err := bindings.CheckID("tenant id", id); err != nil {
			t.Errorf("CheckID(%q) = %v, want nil", id, err)
		}
	}
	bad := []string{"", strings.Repeat("x", bindings.MaxIDLength+1), "a\x00b", "a\nb", "a\tb", "\x7f", "a\u0085b", "\xff"}
	for _, id := range bad {
		err := bindings.CheckID("tenant id", id)
		if agents.CodeOf(err) != agents.CodeInvalidMessage {
			t.Errorf("CheckID(%q) = %v, want invalid-message", id, err)
		}
	}
	if err := bindings.CheckOptionalID("project id", ""); err != nil {
		t.Errorf("CheckOptionalID(\"\") = %v", err)
	}
}

func TestCheckStepKey(t *testing.T) {
	ok := []string{"setup", "agent-loop/2/dispatch-tools/" + strings.Repeat("x", bindings.MaxIDLength) + "/approval", strings.Repeat("k", bindings.MaxStepKeyLength)}
	for _, k := range ok {
		if err := bindings.CheckStepKey(k); err != nil {
			t.Errorf("CheckStepKey(%.40q) = %v, want nil", k, err)
		}
	}
	bad := []string{"", strings.Repeat("k", bindings.MaxStepKeyLength+1), "a\x00b", "a\nb", "\xff"}
	for _, k := range bad {
		if err := bindings.CheckStepKey(k); agents.CodeOf(err) != agents.CodeInvalidMessage {
			t.Errorf("CheckStepKey(%.40q) = %v, want invalid-message", k, err)
		}
	}
}
