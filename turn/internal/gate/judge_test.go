package gate

import (
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn/internal/routing"
)

// TestFindRoute: the judge's route is the one named when the policy allows
// it, else the first allowed model in the registry's order; each refusal
// is coded.
func TestFindRoute(t *testing.T) {
	a := scripted.New(nil, &scripted.Options{ID: "a", Models: []bindings.ModelInfo{{ID: "a1"}, {ID: "a2"}}})
	b := scripted.New(nil, &scripted.Options{ID: "b", Models: []bindings.ModelInfo{{ID: "b1"}}})
	reg := bindings.Providers{a, b}
	denyA := routing.Allow{DenyProviders: []string{"a"}}
	for _, tt := range []struct {
		name            string
		provider, model string
		allow           routing.Allow
		reg             bindings.ProviderRegistry
		want            string // provider/model, or the error's code
	}{
		{"first allowed", "", "", routing.Allow{}, reg, "a/a1"},
		{"first allowed past a denied provider", "", "", denyA, reg, "b/b1"},
		{"named route", "a", "a2", routing.Allow{}, reg, "a/a2"},
		{"named route refused", "a", "a2", denyA, reg, agents.CodeCapabilityRoutingFailed},
		{"named provider not registered", "z", "z1", routing.Allow{}, reg, agents.CodeCapabilityRoutingFailed},
		{"nothing allowed", "", "", routing.Allow{AllowProviders: &[]string{}}, reg, agents.CodeCapabilityRoutingFailed},
		{"no registry", "", "", routing.Allow{}, nil, agents.CodeInvalidBindings},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := FindRoute(tt.provider, tt.model, tt.allow, tt.reg)
			got := agents.CodeOf(err)
			if err == nil {
				got = r.Provider.ID() + "/" + r.Model.ID
				if r.id != r.Provider.ID() {
					t.Errorf("route id %q, provider %q", r.id, r.Provider.ID())
				}
			}
			if got != tt.want {
				t.Errorf("FindRoute = %s (%v), want %s", got, err, tt.want)
			}
		})
	}
}
