package quota

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// TestMerge: the registry's quotas replace the static ones of the same
// name (appended after the others), and the static list is not written to.
func TestMerge(t *testing.T) {
	static := []bindings.Quota{{Name: "a", Limit: 1}, {Name: "b", Limit: 2}}
	keep := slices.Clone(static)
	got := Merge(static, []bindings.Quota{{Name: "a", Limit: 10}, {Name: "c", Limit: 3}})
	want := []bindings.Quota{{Name: "b", Limit: 2}, {Name: "a", Limit: 10}, {Name: "c", Limit: 3}}
	if !slices.Equal(got, want) {
		t.Fatalf("Merge = %+v, want %+v", got, want)
	}
	if !slices.Equal(static, keep) {
		t.Fatalf("Merge wrote to the static quotas: %+v", static)
	}
	if got := Merge(static, nil); &got[0] != &static[0] {
		t.Fatal("Merge without registry quotas copied the static ones")
	}
}

type failingRegistry struct{}

func (failingRegistry) Evaluate(context.Context, bindings.PolicyRequest) (bindings.TenantPolicy, error) {
	return bindings.TenantPolicy{}, errors.New("down")
}

// TestLoadOutage: a registry that cannot answer is a retryable
// PolicyOutage with tenant-policy-unavailable's code.
func TestLoadOutage(t *testing.T) {
	_, err := Load(context.Background(), nil, failingRegistry{}, bindings.PolicyRequest{TenantID: "t"})
	var po *PolicyOutage
	if !errors.As(err, &po) || !agents.IsRetryable(err) || agents.CodeOf(err) != agents.CodeTenantPolicyUnavailable {
		t.Fatalf("Load = %v, want a retryable tenant-policy-unavailable outage", err)
	}
}

// TestToolRefusal: a fail quota's refusal is the call's tool error naming
// the quota and when it frees; a wait quota's and other errors are not.
func TestToolRefusal(t *testing.T) {
	qe := &agents.QuotaExceededError{Quota: "searches", RetryAfter: 1500 * time.Millisecond}
	msg, refused := ToolRefusal(qe)
	if want := `not run: the tenant's quota "searches" of calls to this tool is used up; it frees in 2s`; !refused || msg != want {
		t.Fatalf("ToolRefusal = %q, %v; want %q", msg, refused, want)
	}
	for _, err := range []error{&Wait{Err: qe}, errors.New("store down")} {
		if _, refused := ToolRefusal(err); refused {
			t.Fatalf("ToolRefusal(%v) refused the call", err)
		}
	}
}

// TestRefusal: a refusal waits only for a wait quota, a store that defers
// runs and a window that frees later.
func TestRefusal(t *testing.T) {
	wq := bindings.Quota{Name: "w", OnExceeded: bindings.QuotaWait}
	res := bindings.QuotaTakeResult{RetryAfter: time.Second}
	for _, c := range []struct {
		q      bindings.Quota
		res    bindings.QuotaTakeResult
		defers bool
		wait   bool
	}{
		{wq, res, true, true},
		{wq, res, false, false},
		{wq, bindings.QuotaTakeResult{}, true, false},
		{bindings.Quota{Name: "f"}, res, true, false},
	} {
		qe, wait := Refusal(c.q, c.res, c.defers)
		if wait != c.wait || qe.Quota != c.q.Name || qe.RetryAfter != c.res.RetryAfter {
			t.Errorf("Refusal(%+v, %+v, %v) = %+v, %v; want wait %v", c.q, c.res, c.defers, qe, wait, c.wait)
		}
	}
}
