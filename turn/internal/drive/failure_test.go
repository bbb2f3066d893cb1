package drive

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// TestFailureRoundTrip: a journaled failure replays as the same typed
// error, with its fields, its code and its message.
func TestFailureRoundTrip(t *testing.T) {
	cause := errors.New("upstream said no")
	for _, err := range []error{
		&agents.InvalidMessageError{Reason: "empty"},
		&agents.AgentVersionMismatchError{Subject: "conversation c", Expected: "a@1.0.0", Actual: "a@2.0.0"},
		&agents.ConversationNotFoundError{ConversationID: "c"},
		&agents.ConversationClosedError{ConversationID: "c"},
		&agents.MissingParameterError{Name: "firmName"},
		&agents.RenderFailureError{Reason: "divided by 0", Err: cause},
		&agents.UnresolvedToolError{ToolID: "t"},
		&agents.ToolVersionUnresolvableError{ToolID: "t", Range: "^9", Available: []string{"1.0.0"}},
		&agents.CapabilityRoutingError{Reason: "none", Refusals: []agents.RoutingRefusal{{Provider: "p", Model: "m", Reason: "lacks vision"}}},
		&agents.ModelInvocationError{Provider: "p", Model: "m", Status: 503, Err: cause},
		&agents.ToolInvocationError{ToolID: "t", ToolVersion: "1.0.0", Message: "bad output"},
		&agents.BudgetExceededError{Kind: agents.BudgetCost, Limit: 0.25, Used: 0.3},
		&agents.TurnAbortedError{Reason: agents.AbortTimeout, Err: cause},
		&agents.HitlRequiredError{ToolID: "t", ApprovalID: "a", Reason: "expired"},
		&agents.GuardrailViolationError{GuardrailID: "g", Reason: "pii"},
		&agents.UnresolvedGuardrailError{GuardrailID: "g", Reason: "no check"},
		&agents.TenantPolicyUnavailableError{PolicyKind: "hitl", Err: cause},
	} {
		t.Run(agents.CodeOf(err), func(t *testing.T) {
			se, detail := EncodeFailure(err)
			got := DecodeFailure(&bindings.JournalEntry{Key: "k", Status: bindings.StepFailed, Error: se, Output: detail})
			if agents.CodeOf(got) != agents.CodeOf(err) || got.Error() != err.Error() {
				t.Errorf("replayed %q (%s), want %q (%s)", got, agents.CodeOf(got), err, agents.CodeOf(err))
			}
			if diff := cmp.Diff(err, got, cmpopts.IgnoreFields(agents.RenderFailureError{}, "Err"),
				cmpopts.IgnoreFields(agents.ModelInvocationError{}, "Err"), cmpopts.IgnoreFields(agents.TurnAbortedError{}, "Err"),
				cmpopts.IgnoreFields(agents.TenantPolicyUnavailableError{}, "Err")); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
		})
	}
	got := DecodeFailure(&bindings.JournalEntry{Key: "k", Status: bindings.StepFailed, Error: &bindings.StepError{Code: "pack-timeout", Message: "pack timed out"}})
	if agents.CodeOf(got) != "pack-timeout" || got.Error() != "pack timed out" {
		t.Errorf("unknown code replayed as %v (%s)", got, agents.CodeOf(got))
	}
}

// TestJournaledIsMarshal: Journaled gives the bytes json.Marshal gives for
// a RawMessage (raw itself when Marshal refuses it), on its fast path and
// off it.
func TestJournaledIsMarshal(t *testing.T) {
	for _, raw := range []string{
		`{"a":1,"b":[true,null,"x"]}`,
		`{ "a" : 1 }`,
		"{\n\t\"a\":\r\n1}",
		`{"html":"<b>&</b>"}`,
		"{\"ls\":\"\u2028\u2029\"}",
		`{"é":"€"}`,
		`"plain"`,
		`{"a":`,
		`not json`,
		`{"a":1}{"b":2}`,
		`  `,
	} {
		want, err := json.Marshal(json.RawMessage(raw))
		if err != nil {
			want = []byte(raw)
		}
		if got := Journaled(json.RawMessage(raw)); string(got) != string(want) {
			t.Errorf("Journaled(%q) = %q, want %q", raw, got, want)
		}
	}
}
