package quota

import (
	"context"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// Load reads a drive's quotas: static (the tenant policy's) and, with a
// registry, its quota kind's for req (Merge), checked. A registry that
// cannot answer is a *PolicyOutage (tenant-policy-unavailable); an
// invalid quota is bindings.CheckQuotas's error (the same policy refuses
// every drive).
func Load(ctx context.Context, static []bindings.Quota, registry bindings.PolicyRegistry, req bindings.PolicyRequest) ([]bindings.Quota, error) {
	qs := static
	if registry != nil {
		req.Kind = bindings.PolicyKindQuota
		tp, err := registry.Evaluate(ctx, req)
		if err != nil {
			return nil, &PolicyOutage{Err: &agents.TenantPolicyUnavailableError{PolicyKind: bindings.PolicyKindQuota, Err: err}}
		}
		qs = Merge(qs, tp.Quotas)
	}
	if err := bindings.CheckQuotas(qs); err != nil {
		return nil, err
	}
	return qs, nil
}
