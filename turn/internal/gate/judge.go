package gate

import (
	"context"
	"strconv"
	"sync"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/routing"
)

// Route is the provider and model llm-judge checks ask.
type Route struct {
	Provider bindings.Provider
	Model    bindings.ModelInfo
	id       string // Provider.ID() when routed
}

// FindRoute finds the judge's provider and model: provider and model when
// provider is set (it must be registered and allowed by p), else the
// first model, in the registry's order, that p allows. No registry is
// *agents.InvalidBindingsError; a route p refuses, or no allowed model,
// is *agents.CapabilityRoutingError with the refusals.
func FindRoute(provider, model string, p routing.Allow, reg bindings.ProviderRegistry) (*Route, error) {
	if reg == nil {
		return nil, &agents.InvalidBindingsError{Reason: "an llm-judge guardrail needs a provider registry (GuardrailsBindings.Providers)"}
	}
	var refusals []agents.RoutingRefusal
	try := func(pr bindings.Provider, m bindings.ModelInfo) *Route {
		if why := routing.Refusal(pr.ID(), m, nil, p); why != "" {
			refusals = append(refusals, agents.RoutingRefusal{Provider: pr.ID(), Model: m.ID, Reason: why})
			return nil
		}
		return &Route{Provider: pr, Model: m, id: pr.ID()}
	}
	if provider != "" {
		pr, ok := reg.Provider(provider)
		if !ok || pr == nil {
			return nil, &agents.CapabilityRoutingError{Reason: "the llm-judge route's provider is not registered",
				Refusals: []agents.RoutingRefusal{{Provider: provider, Model: model, Reason: "provider not registered"}}}
		}
		m := bindings.ModelInfo{ID: model}
		for _, mi := range pr.Models() {
			if mi.ID == model {
				m = mi
				break
			}
		}
		if r := try(pr, m); r != nil {
			return r, nil
		}
		return nil, &agents.CapabilityRoutingError{Reason: "the tenant policy does not allow the llm-judge route", Refusals: refusals}
	}
	for _, pr := range reg.Providers() {
		for _, m := range pr.Models() {
			if r := try(pr, m); r != nil {
				return r, nil
			}
		}
	}
	return nil, &agents.CapabilityRoutingError{Reason: "no model the tenant policy allows can judge", Refusals: refusals}
}

// Judge is the bindings.Judge an llm-judge check gets: the routed
// provider and model, each call with its own request id, usage summed.
type Judge struct {
	route     *Route
	tenantID  string
	runID     string
	requestID string
	mu        sync.Mutex
	n         int
	usage     bindings.Usage
}

var _ bindings.Judge = (*Judge)(nil)

// NewJudge returns the Judge of one guardrail of run runID: its calls'
// request ids are requestID + "/judge/<n>", n counting from 1.
func NewJudge(route *Route, tenantID, runID, requestID string) *Judge {
	return &Judge{route: route, tenantID: tenantID, runID: runID, requestID: requestID}
}

// Judge asks the routed model. An uncoded failure is
// *agents.ModelInvocationError; a response without a cost is priced with
// the model's rates.
func (j *Judge) Judge(ctx context.Context, messages []bindings.ChatMessage) (bindings.GenerateResponse, error) {
	j.mu.Lock()
	j.n++
	id := j.requestID + "/judge/" + strconv.Itoa(j.n)
	j.mu.Unlock()
	provider, model := j.route.id, j.route.Model.ID
	resp, err := j.route.Provider.Generate(ctx, bindings.GenerateRequest{
		Model: model, Messages: messages, RequestID: id, TenantID: j.tenantID, RunID: j.runID,
	})
	if err != nil {
		if agents.CodeOf(err) == "" {
			err = &agents.ModelInvocationError{Provider: provider, Model: model, Err: err}
		}
		return resp, err
	}
	if resp.Usage.CostUsd == 0 {
		resp.Usage.CostUsd = j.route.Model.Cost(resp.Usage.InputTokens, resp.Usage.OutputTokens)
	}
	j.mu.Lock()
	j.usage = j.usage.Add(resp.Usage)
	j.mu.Unlock()
	return resp, nil
}

// Total is the usage of every call the judge made.
func (j *Judge) Total() bindings.Usage {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.usage
}
