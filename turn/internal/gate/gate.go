// Package gate runs the guardrail checks of turn's evaluate-guardrails
// step: it resolves an agent's guardrails against the registries, and runs
// one guardrail's check on a turn's trace, an llm-judge check with a Judge
// on a model the tenant's merged policy allows (judge.go). turn keeps the
// public steps (ResolveGuardrails, EvaluateGate) and their outcomes.
package gate

import (
	"context"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// Resolve resolves guardrail ids for a tenant, in order, and checks that
// each one's check is registered: an unknown id, a missing registry or an
// unregistered check is *agents.UnresolvedGuardrailError (a registry
// failure keeps its code).
func Resolve(ctx context.Context, guardrails bindings.GuardrailRegistry, checks bindings.CheckRegistry, tenantID string, ids []string) ([]bindings.Guardrail, error) {
	out := make([]bindings.Guardrail, 0, len(ids))
	for _, id := range ids {
		if guardrails == nil {
			return nil, &agents.UnresolvedGuardrailError{GuardrailID: id, Reason: "no guardrail registry is bound"}
		}
		g, err := guardrails.Guardrail(ctx, tenantID, id)
		if err != nil {
			if agents.CodeOf(err) == "" {
				return nil, &agents.UnresolvedGuardrailError{GuardrailID: id, Reason: err.Error()}
			}
			return nil, err
		}
		if checks == nil {
			return nil, &agents.UnresolvedGuardrailError{GuardrailID: id, Reason: "no check registry is bound"}
		}
		if _, ok := checks.Check(g.CheckID); !ok {
			return nil, &agents.UnresolvedGuardrailError{GuardrailID: id, Reason: "check " + g.CheckID + " is not registered"}
		}
		out = append(out, g)
	}
	return out, nil
}

// Check runs guardrail g's check on trace and returns its result and what
// its judge used. An llm-judge guardrail whose check implements
// bindings.JudgeCheck gets a Judge on the route *route, found with find
// on first use and kept there for the guardrails after it (find's error
// is returned as it is); its calls' request ids start with requestID. An
// unregistered check is *agents.UnresolvedGuardrailError; a check that
// cannot run fails closed with *agents.GuardrailViolationError (its
// verdict is unknown), unless ctx is done (its error is returned).
func Check(ctx context.Context, checks bindings.CheckRegistry, g bindings.Guardrail, trace bindings.RunTrace, route **Route, find func() (*Route, error), requestID string) (bindings.CheckResult, bindings.Usage, error) {
	var chk bindings.Check
	ok := false
	if checks != nil {
		chk, ok = checks.Check(g.CheckID)
	}
	if !ok {
		return bindings.CheckResult{}, bindings.Usage{}, &agents.UnresolvedGuardrailError{GuardrailID: g.ID, Reason: "check " + g.CheckID + " is not registered"}
	}
	var res bindings.CheckResult
	var usage bindings.Usage
	var err error
	if jc, isJudge := chk.(bindings.JudgeCheck); isJudge && g.Kind == bindings.KindLLMJudge {
		if *route == nil {
			if *route, err = find(); err != nil {
				return bindings.CheckResult{}, bindings.Usage{}, err
			}
		}
		j := NewJudge(*route, trace.TenantID, trace.RunID, requestID)
		res, err = jc.EvaluateWithJudge(ctx, g.Config, trace, j)
		usage = j.Total()
	} else {
		res, err = chk.Evaluate(ctx, g.Config, trace)
	}
	if err != nil {
		if ctx.Err() != nil {
			return bindings.CheckResult{}, bindings.Usage{}, err
		}
		return bindings.CheckResult{}, bindings.Usage{}, &agents.GuardrailViolationError{GuardrailID: g.ID, Reason: "check could not run: " + err.Error()}
	}
	return res, usage, nil
}
