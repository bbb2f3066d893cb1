package memstore

import (
	"context"
	"errors"
	"maps"
	"slices"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// Policies is a static PolicyRegistry: ByTenant maps a tenant id to its
// policies by kind (bindings.PolicyKindModel, bindings.PolicyKindHitl). A
// tenant or kind without an entry gets the zero policy. Fail, when set, is
// asked first and its non-nil error fails the evaluation, so tests can
// inject a policy outage. Build it once and do not change it while turns
// read it.
type Policies struct {
	ByTenant map[string]map[string]bindings.TenantPolicy
	Fail     func(req bindings.PolicyRequest) error
}

var _ bindings.PolicyRegistry = Policies{}

// Evaluate returns a copy of the tenant's policy of req.Kind.
func (p Policies) Evaluate(ctx context.Context, req bindings.PolicyRequest) (bindings.TenantPolicy, error) {
	if err := alive(ctx); err != nil {
		return bindings.TenantPolicy{}, err
	}
	if p.Fail != nil {
		if err := p.Fail(req); err != nil {
			return bindings.TenantPolicy{}, err
		}
	}
	return clonePolicy(p.ByTenant[req.TenantID][req.Kind]), nil
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

func clonePolicy(p bindings.TenantPolicy) bindings.TenantPolicy {
	p.AllowProviders = cloneStrings(p.AllowProviders)
	p.DenyProviders = cloneStrings(p.DenyProviders)
	p.AllowModels = cloneStrings(p.AllowModels)
	p.DenyModels = cloneStrings(p.DenyModels)
	p.Quotas = slices.Clone(p.Quotas)
	p.MaxCostUsd = clonePtr(p.MaxCostUsd)
	p.MaxSteps = clonePtr(p.MaxSteps)
	p.MaxWallMs = clonePtr(p.MaxWallMs)
	if p.Hitl != nil {
		h := *p.Hitl
		h.MaxTimeoutMs = clonePtr(h.MaxTimeoutMs)
		h.AfterTurns = clonePtr(h.AfterTurns)
		if h.ToolFloors != nil {
			h.ToolFloors = maps.Clone(h.ToolFloors)
		}
		p.Hitl = &h
	}
	return p
}

// Guardrails is a static GuardrailRegistry: a tenant's own definitions
// (ByTenant) win over the Shared ones every tenant sees. Build it once and
// do not change it while turns read it.
type Guardrails struct {
	ByTenant map[string]map[string]bindings.Guardrail
	Shared   map[string]bindings.Guardrail
}

var _ bindings.GuardrailRegistry = Guardrails{}

// Guardrail resolves id for a tenant; an unknown id is
// *agents.UnresolvedGuardrailError.
func (g Guardrails) Guardrail(ctx context.Context, tenantID, id string) (bindings.Guardrail, error) {
	if err := alive(ctx); err != nil {
		return bindings.Guardrail{}, err
	}
	gr, ok := g.ByTenant[tenantID][id]
	if !ok {
		gr, ok = g.Shared[id]
	}
	if !ok {
		return bindings.Guardrail{}, &agents.UnresolvedGuardrailError{GuardrailID: id, Reason: "no such guardrail for the tenant"}
	}
	gr.Config = cloneJSON(gr.Config)
	return gr, nil
}

// Checks is a static CheckRegistry by check id.
type Checks map[string]bindings.Check

var _ bindings.CheckRegistry = Checks{}

// Check finds a check by id.
func (c Checks) Check(checkID string) (bindings.Check, bool) {
	ch, ok := c[checkID]
	return ch, ok && ch != nil
}

// ErrSecretNotFound is the cause of the error ResolveSecret returns for a
// secret the tenant does not have.
var ErrSecretNotFound = errors.New("secret not found")

// Secrets is a static SecretResolver: tenant id → secret name → value.
type Secrets map[string]map[string]string

var _ bindings.SecretResolver = Secrets{}

// ResolveSecret returns the tenant's secret; a missing one is
// *agents.PersistenceError wrapping ErrSecretNotFound, marked Permanent.
func (s Secrets) ResolveSecret(ctx context.Context, tenantID, name string) (string, error) {
	if err := alive(ctx); err != nil {
		return "", err
	}
	v, ok := s[tenantID][name]
	if !ok {
		return "", &agents.PersistenceError{Op: "resolve secret " + name, Err: ErrSecretNotFound, Permanent: true}
	}
	return v, nil
}

// Allow is an Authorizer from a predicate: a call is allowed when the
// predicate returns true. A nil Allow allows nothing.
type Allow func(req bindings.AuthzRequest) bool

var _ bindings.Authorizer = Allow(nil)

// Authorize decides req by the predicate.
func (f Allow) Authorize(ctx context.Context, req bindings.AuthzRequest) (bindings.AuthzDecision, error) {
	if err := alive(ctx); err != nil {
		return bindings.AuthzDecision{}, err
	}
	if f != nil && f(req) {
		return bindings.AuthzDecision{Allowed: true}, nil
	}
	return bindings.AuthzDecision{Reason: "principal " + req.Principal.ID + " may not invoke " + req.ToolID + "@" + req.ToolVersion}, nil
}

// AllowTools returns an Allow from an allow list: principal id → the tool
// ids ("acme.search") or exact tool versions ("acme.search@1.2.0") the
// principal may invoke. The list is copied.
func AllowTools(allowed map[string][]string) Allow {
	list := make(map[string][]string, len(allowed))
	for p, tools := range allowed {
		list[p] = slices.Clone(tools)
	}
	return func(req bindings.AuthzRequest) bool {
		tools := list[req.Principal.ID]
		return slices.Contains(tools, req.ToolID) || slices.Contains(tools, req.ToolID+"@"+req.ToolVersion)
	}
}
