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
