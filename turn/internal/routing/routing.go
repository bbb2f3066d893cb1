// Package routing picks the provider and model a turn calls, and checks a
// journaled pick again: the features the agent's first capability needs,
// the allow and deny lists of the tenant's merged policy, the agent's
// preferred provider and model, and the registry's order. Every refusal
// is named in *agents.CapabilityRoutingError.
package routing

import (
	"slices"
	"strings"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
)

// Allow is what a merged tenant policy allows of providers and models: a
// nil allow list allows everything, an empty non-nil one nothing; a deny
// list refuses what it names.
type Allow struct {
	AllowProviders *[]string
	DenyProviders  []string
	AllowModels    *[]string
	DenyModels     []string
}

// Provider reports whether p allows provider id, and why
// not.
func (p Allow) Provider(id string) (bool, string) {
	if slices.Contains(p.DenyProviders, id) {
		return false, "provider denied by tenant policy"
	}
	if p.AllowProviders != nil && !slices.Contains(*p.AllowProviders, id) {
		return false, "provider not in the tenant policy's allowed providers"
	}
	return true, ""
}

// Model reports whether p allows a provider's model (named
// by id or "provider/model"), and why not.
func (p Allow) Model(provider, model string) (bool, string) {
	if ok, why := p.Provider(provider); !ok {
		return false, why
	}
	full := provider + "/" + model
	if slices.Contains(p.DenyModels, model) || slices.Contains(p.DenyModels, full) {
		return false, "model denied by tenant policy"
	}
	if p.AllowModels != nil && !slices.Contains(*p.AllowModels, model) && !slices.Contains(*p.AllowModels, full) {
		return false, "model not in the tenant policy's allowed models"
	}
	return true, ""
}

// Needs returns the features of the agent's first capability (a turn
// routes on it); none when the agent declares no capability.
func Needs(a agent.Agent) []string {
	if len(a.Capabilities) == 0 {
		return nil
	}
	needs := make([]string, 0, len(a.Capabilities[0].Needs))
	for _, n := range a.Capabilities[0].Needs {
		needs = append(needs, n.Feature)
	}
	return needs
}

// Refusal says why a model cannot serve needs under p ("" when it can).
func Refusal(provider string, m bindings.ModelInfo, needs []string, p Allow) string {
	if ok, why := p.Model(provider, m.ID); !ok {
		return why
	}
	var missing []string
	for _, f := range needs {
		if !m.HasFeature(f) {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return "lacks feature " + strings.Join(missing, ", ")
	}
	return ""
}

// Route picks the provider and model for the agent's first capability under
// the merged policy. Candidates are tried in the registry's order, the
// agent's preferred provider first and, within it, its preferred model
// first: a preference is honoured when it can serve the capability, and
// otherwise the turn falls back to the other candidates. It returns the
// provider's id and the model's info; no candidate is
// *agents.CapabilityRoutingError with a refusal per candidate.
func Route(a agent.Agent, reg bindings.ProviderRegistry, p Allow) (provider string, model bindings.ModelInfo, err error) {
	needs := Needs(a)
	providers := reg.Providers()
	ordered := make([]bindings.Provider, 0, len(providers))
	var refusals []agents.RoutingRefusal
	if a.PreferredProvider != "" {
		if pr, ok := reg.Provider(a.PreferredProvider); ok && pr != nil {
			ordered = append(ordered, pr)
		} else {
			refusals = append(refusals, agents.RoutingRefusal{Provider: a.PreferredProvider, Model: a.PreferredModel, Reason: "preferred provider is not registered"})
		}
	}
	for _, pr := range providers {
		if pr != nil && (a.PreferredProvider == "" || pr.ID() != a.PreferredProvider) {
			ordered = append(ordered, pr)
		}
	}
	for _, pr := range ordered {
		id := pr.ID()
		if ok, why := p.Provider(id); !ok {
			refusals = append(refusals, agents.RoutingRefusal{Provider: id, Model: "*", Reason: why})
			continue
		}
		models := pr.Models()
		if i := slices.IndexFunc(models, func(m bindings.ModelInfo) bool { return m.ID == a.PreferredModel }); a.PreferredModel != "" && i > 0 {
			reordered := make([]bindings.ModelInfo, 0, len(models))
			reordered = append(reordered, models[i])
			reordered = append(reordered, models[:i]...)
			models = append(reordered, models[i+1:]...)
		}
		if len(models) == 0 {
			refusals = append(refusals, agents.RoutingRefusal{Provider: id, Model: "*", Reason: "provider serves no models"})
		}
		for _, m := range models {
			if why := Refusal(id, m, needs, p); why != "" {
				refusals = append(refusals, agents.RoutingRefusal{Provider: id, Model: m.ID, Reason: why})
				continue
			}
			return id, m, nil
		}
	}
	reason := "no provider and model can serve the agent's capability"
	if len(providers) == 0 {
		reason = "no providers are registered"
	}
	return "", bindings.ModelInfo{}, &agents.CapabilityRoutingError{Reason: reason, Refusals: refusals}
}

// Check verifies that a journaled route still holds: the provider is
// registered, serves the model, and the policy allows it with the needed
// features.
func Check(a agent.Agent, reg bindings.ProviderRegistry, p Allow, provider, model string) (bindings.Provider, bindings.ModelInfo, error) {
	pr, ok := reg.Provider(provider)
	if !ok || pr == nil {
		return nil, bindings.ModelInfo{}, &agents.CapabilityRoutingError{
			Reason:   "the run's provider is no longer registered",
			Refusals: []agents.RoutingRefusal{{Provider: provider, Model: model, Reason: "provider not registered"}},
		}
	}
	for _, m := range pr.Models() {
		if m.ID != model {
			continue
		}
		if why := Refusal(provider, m, Needs(a), p); why != "" {
			return nil, bindings.ModelInfo{}, &agents.CapabilityRoutingError{
				Reason:   "the run's model is no longer allowed",
				Refusals: []agents.RoutingRefusal{{Provider: provider, Model: model, Reason: why}},
			}
		}
		return pr, m, nil
	}
	return nil, bindings.ModelInfo{}, &agents.CapabilityRoutingError{
		Reason:   "the run's model is no longer served",
		Refusals: []agents.RoutingRefusal{{Provider: provider, Model: model, Reason: "model not served by the provider"}},
	}
}
