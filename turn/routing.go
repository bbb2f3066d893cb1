package turn

import (
	"slices"
	"strings"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
)

// needsOf returns the features of the agent's first capability (a turn
// routes on it); none when the agent declares no capability.
func needsOf(a agent.Agent) []string {
	if len(a.Capabilities) == 0 {
		return nil
	}
	needs := make([]string, 0, len(a.Capabilities[0].Needs))
	for _, n := range a.Capabilities[0].Needs {
		needs = append(needs, n.Feature)
	}
	return needs
}

// refusal says why a model cannot serve needs under p ("" when it can).
func refusal(provider string, m bindings.ModelInfo, needs []string, p Policy) string {
	if ok, why := p.allowsModel(provider, m.ID); !ok {
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

// route picks the provider and model for the agent's first capability under
// the merged policy. Candidates are tried in the registry's order, the
// agent's preferred provider first and, within it, its preferred model
// first: a preference is honoured when it can serve the capability, and
// otherwise the turn falls back to the other candidates. No candidate is
// *agents.CapabilityRoutingError with a refusal per candidate.
func route(a agent.Agent, reg bindings.ProviderRegistry, p Policy) (ProviderRef, bindings.ModelInfo, error) {
	needs := needsOf(a)
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
		if ok, why := p.allowsProvider(id); !ok {
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
			if why := refusal(id, m, needs, p); why != "" {
				refusals = append(refusals, agents.RoutingRefusal{Provider: id, Model: m.ID, Reason: why})
				continue
			}
			return ProviderRef{Provider: id, Model: m.ID}, m, nil
		}
	}
	reason := "no provider and model can serve the agent's capability"
	if len(providers) == 0 {
		reason = "no providers are registered"
	}
	return ProviderRef{}, bindings.ModelInfo{}, &agents.CapabilityRoutingError{Reason: reason, Refusals: refusals}
}

// checkRoute verifies that a journaled route still holds: the provider is
// registered, serves the model, and the policy allows it with the needed
// features.
func checkRoute(a agent.Agent, reg bindings.ProviderRegistry, p Policy, ref ProviderRef) (bindings.Provider, bindings.ModelInfo, error) {
	pr, ok := reg.Provider(ref.Provider)
	if !ok || pr == nil {
		return nil, bindings.ModelInfo{}, &agents.CapabilityRoutingError{
			Reason:   "the run's provider is no longer registered",
			Refusals: []agents.RoutingRefusal{{Provider: ref.Provider, Model: ref.Model, Reason: "provider not registered"}},
		}
	}
	for _, m := range pr.Models() {
		if m.ID != ref.Model {
			continue
		}
		if why := refusal(ref.Provider, m, needsOf(a), p); why != "" {
			return nil, bindings.ModelInfo{}, &agents.CapabilityRoutingError{
				Reason:   "the run's model is no longer allowed",
				Refusals: []agents.RoutingRefusal{{Provider: ref.Provider, Model: ref.Model, Reason: why}},
			}
		}
		return pr, m, nil
	}
	return nil, bindings.ModelInfo{}, &agents.CapabilityRoutingError{
		Reason:   "the run's model is no longer served",
		Refusals: []agents.RoutingRefusal{{Provider: ref.Provider, Model: ref.Model, Reason: "model not served by the provider"}},
	}
}
