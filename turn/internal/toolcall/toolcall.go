// Package toolcall holds what turn decides of an agent's tools and of one
// tool call of a model response apart from its journal: the tools setup
// resolves (Resolve, Ungated), the checks a call's plan makes before
// anything runs (the authorizer's verdict, the gate that applies, the
// reason a reviewer is asked), the secrets the call is given, how a
// failed invocation counts (told to the model, or the turn's failure),
// what the model is told of a call a reviewer did not approve, and the
// tool list a model request carries (Defs, in a backing a pooled drive
// reuses).
// It does not import turn.
package toolcall

import (
	"context"
	"fmt"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/codes"
	"github.com/kindgi/agents/turn/internal/tighten"
)

// Denied asks authz about req and returns why the call is refused: ""
// when it is allowed. An authorizer that fails denies the call.
func Denied(ctx context.Context, authz bindings.Authorizer, req bindings.AuthzRequest) string {
	dec, err := authz.Authorize(ctx, req)
	switch {
	case err != nil:
		return "not authorized: the authorizer could not decide"
	case !dec.Allowed:
		if dec.Reason != "" {
			return "not authorized: " + dec.Reason
		}
		return "not authorized"
	}
	return ""
}

// Gate is the gate of tool d: g, the policy's gate for it, raised to the
// registry's default gate of d (a floor, as the tenant's).
func Gate(g agent.ToolGate, d bindings.ToolDescriptor) agent.ToolGate {
	if d.Gate != nil {
		g = tighten.StricterGate(g, *d.Gate)
	}
	return g
}

// AskReason is why a call of tool toolID under gate g asks a reviewer,
// "" when it does not: always_ask always asks, ask_on_first_use asks when
// used reports the tool never ran in the conversation (used is called
// only then).
func AskReason(ctx context.Context, g agent.ToolGate, toolID string, used func(context.Context, string) (bool, error)) (string, error) {
	switch g.Mode {
	case agent.GateAlwaysAsk:
		return "tool " + toolID + " always asks for approval", nil
	case agent.GateAskOnFirstUse:
		ok, err := used(ctx, toolID)
		if err != nil || ok {
			return "", err
		}
		return "first use of tool " + toolID + " in this conversation", nil
	}
	return "", nil
}

// Secrets resolves the secrets tool d declares for tenantID: nil when it
// declares none. A missing resolver or a failed resolution is
// *agents.ToolInvocationError.
func Secrets(ctx context.Context, res bindings.SecretResolver, tenantID string, d bindings.ToolDescriptor) (map[string]string, error) {
	if len(d.Secrets) == 0 {
		return nil, nil
	}
	if res == nil {
		return nil, &agents.ToolInvocationError{ToolID: d.ID, ToolVersion: d.Version, Message: "the tool needs secrets and no secret resolver is bound"}
	}
	out := make(map[string]string, len(d.Secrets))
	for _, name := range d.Secrets {
		v, err := res.ResolveSecret(ctx, tenantID, name)
		if err != nil {
			return nil, &agents.ToolInvocationError{ToolID: d.ID, ToolVersion: d.Version, Message: "resolve secret " + name, Err: err}
		}
		out[name] = v
	}
	return out, nil
}

// Failure sorts the error err of an invocation of tool d: nil when it is
// the tool's own (uncoded) error, which the model is told; otherwise the
// turn's failure — a coded tool-invocation-failed as it is, a tool this
// process's registry cannot resolve (setup resolved it: another process
// may run it) a driver fault, any other coded error a
// *agents.ToolInvocationError.
func Failure(err error, d bindings.ToolDescriptor) error {
	switch agents.CodeOf(err) {
	case "":
		return nil
	case agents.CodeToolInvocationFailed:
		return err
	case agents.CodeUnresolvedTool, agents.CodeToolVersionUnresolvable:
		return &codes.DriverFaultError{Err: err}
	}
	return &agents.ToolInvocationError{ToolID: d.ID, ToolVersion: d.Version, Err: err}
}

// Resolve resolves each of an agent's tool refs with the tenant's
// registry, in order: a registry's uncoded failure is
// *agents.UnresolvedToolError.
func Resolve(ctx context.Context, tt bindings.TenantTools, refs []agent.ToolRef) ([]bindings.ToolDescriptor, error) {
	out := make([]bindings.ToolDescriptor, 0, len(refs))
	for _, ref := range refs {
		d, err := tt.Resolve(ctx, ref)
		if err != nil {
			if agents.CodeOf(err) == "" {
				return nil, &agents.UnresolvedToolError{ToolID: ref.ID}
			}
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// Ungated reports the first tool whose registry gates it (its default
// gate asks) when there is no HITL binding to ask: *agents.InvalidBindingsError.
func Ungated(tools []bindings.ToolDescriptor) error {
	for _, d := range tools {
		if d.Gate != nil && d.Gate.Mode != "" && d.Gate.Mode != agent.GateNeverAsk {
			return &agents.InvalidBindingsError{Reason: "tool " + d.ID + " is gated by its registry (" + string(d.Gate.Mode) + ") and no HITL binding (Bindings.Hitl) is bound to ask for approvals"}
		}
	}
	return nil
}

// NotRun is what the model is told of a gated call a reviewer did not
// approve: its approval expired, or the reviewer denied it (with their
// comment, when they left one).
func NotRun(expired bool, comment string) string {
	switch {
	case expired:
		return "not run: the approval request expired"
	case comment != "":
		return "not run: the reviewer denied this call: " + comment
	}
	return "not run: the reviewer denied this call"
}

// Find returns the tool of id among tools.
func Find(tools []bindings.ToolDescriptor, id string) (bindings.ToolDescriptor, bool) {
	for _, d := range tools {
		if d.ID == id {
			return d, true
		}
	}
	return bindings.ToolDescriptor{}, false
}

// Unknown is what the model is told of a call of tool name, which the
// agent does not have: invalid is the name that stands for one that broke
// the rules on names (empty, longer than maxLen bytes, holding control
// characters).
func Unknown(name, invalid string, maxLen int) string {
	if name == invalid {
		return fmt.Sprintf("the tool name of this call was not valid (empty, longer than %d bytes, or holding control characters): call one of the tools listed", maxLen)
	}
	return "tool " + name + " is not available to this agent"
}
