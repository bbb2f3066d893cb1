package routing

import "testing"

// TestAllow pins the allow and deny lists: a nil allow list allows
// everything, an empty one nothing, and a model is named by its id or by
// "provider/model".
func TestAllow(t *testing.T) {
	none := []string{}
	only := []string{"m1"}
	for _, c := range []struct {
		name            string
		p               Allow
		provider, model string
		want            bool
	}{
		{"no lists", Allow{}, "p", "m", true},
		{"provider denied", Allow{DenyProviders: []string{"p"}}, "p", "m", false},
		{"empty provider allow list", Allow{AllowProviders: &none}, "p", "m", false},
		{"model denied by id", Allow{DenyModels: []string{"m"}}, "p", "m", false},
		{"model denied by full name", Allow{DenyModels: []string{"p/m"}}, "p", "m", false},
		{"model allowed", Allow{AllowModels: &only}, "p", "m1", true},
		{"model not allowed", Allow{AllowModels: &only}, "p", "m2", false},
	} {
		if ok, why := c.p.Model(c.provider, c.model); ok != c.want || ok != (why == "") {
			t.Errorf("%s: Model(%q, %q) = %v, %q; want %v", c.name, c.provider, c.model, ok, why, c.want)
		}
	}
}
