package turn

import (
	"testing"

	"github.com/kindgi/agents/turn/internal/modelresp"
	"github.com/kindgi/agents/turn/internal/tighten"
)

// TestPublicConstantsMatchTheInternalOnes holds the public constants,
// written as literals so that their documentation shows their values, to
// the values the internal packages decide by.
func TestPublicConstantsMatchTheInternalOnes(t *testing.T) {
	pairs := []struct{ public, internal any }{
		{RoleStandard, tighten.RoleStandard},
		{RoleSenior, tighten.RoleSenior},
		{RoleAdmin, tighten.RoleAdmin},
		{OnTimeoutEscalate, tighten.OnTimeoutEscalate},
		{OnTimeoutDeny, tighten.OnTimeoutDeny},
		{OnTimeoutFail, tighten.OnTimeoutFail},
		{MaxToolCallIDLength, modelresp.MaxIDLength},
		{MaxToolNameLength, modelresp.MaxNameLength},
		{InvalidToolName, modelresp.InvalidName},
	}
	for i, p := range pairs {
		if p.public != p.internal {
			t.Errorf("constant %d: turn has %v, the internal package %v", i, p.public, p.internal)
		}
	}
}
