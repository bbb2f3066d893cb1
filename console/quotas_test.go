package console_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/console"
	"github.com/kindgi/agents/memstore"
)

// TestQuotasPageShowsUseAndWaitingRuns: the quotas page shows each quota
// of the reviewer's tenants with its use in the window, its limit and when
// the window frees, marks a full one, lists the runs waiting on a quota
// (queued with a NotBefore ahead) with a link, and shows nothing of a
// tenant the reviewer does not review; the runs list marks the waiting
// run.
func TestQuotasPageShowsUseAndWaitingRuns(t *testing.T) {
	ctx := t.Context()
	s := memstore.New(nil)
	now := time.Now().UTC()
	calls := bindings.Quota{Name: "calls-per-minute", Scope: bindings.QuotaModelCalls, Limit: 5, WindowSeconds: 60, OnExceeded: "wait"}
	email := bindings.Quota{Name: "emails", Scope: bindings.QuotaToolCalls, ToolID: "acme.send-email", Limit: 10, WindowSeconds: 3600}
	for i, unit := range []string{"r1/agent-loop/1/model-call", "r1/agent-loop/2/model-call", "r2/agent-loop/1/model-call", "r3/agent-loop/1/model-call", "r4/agent-loop/1/model-call"} {
		if res, err := s.Take(ctx, bindings.QuotaTakeInput{TenantID: "acme", Quota: calls, Unit: unit, Amount: 1, Now: now.Add(-time.Duration(30-i) * time.Second)}); err != nil || !res.Allowed {
			t.Fatalf("take %d: %+v, %v", i, res, err)
		}
	}
	if _, err := s.Take(ctx, bindings.QuotaTakeInput{TenantID: "acme", Quota: email, Unit: "r1/send", Amount: 1, Now: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Take(ctx, bindings.QuotaTakeInput{TenantID: "globex", Quota: bindings.Quota{Name: "globex-secret-quota", Scope: bindings.QuotaTurns, Limit: 1, WindowSeconds: 60}, Unit: "g", Amount: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: "acme", RunID: "run-waiting", FlowID: "agent.turn", FlowVersion: "1.1.0", Owner: "w1", LeaseTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	until := now.Add(30 * time.Second)
	if err := s.DeferRun(ctx, bindings.DeferRunInput{TenantID: "acme", RunID: "run-waiting", Owner: "w1", NotBefore: until}); err != nil {
		t.Fatal(err)
	}
	h := newConsole(t, s)
	rec := do(h, http.MethodGet, "/quotas", [3]string{"ops", "admin", "acme"}, nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /quotas = %d: %s", rec.Code, rec.Body)
	}
	body := rec.Body.String()
	for _, want := range []string{
		"calls-per-minute", "model-calls", "5 / 5", "full", "wait",
		"emails", "tool-calls (acme.send-email)", "1 / 10",
		`href="/runs/acme/run-waiting"`, until.Format("2006-01-02 15:04:05 UTC"),
		`aria-current="page">Quotas`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the quotas page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "globex") {
		t.Errorf("the quotas page shows another tenant's quota:\n%s", body)
	}
	runs := do(h, http.MethodGet, "/runs", [3]string{"ops", "admin", "acme"}, nil)
	if !strings.Contains(runs.Body.String(), "waits on a quota") {
		t.Errorf("the runs list does not mark the run waiting on a quota:\n%s", runs.Body)
	}
}

// TestQuotasPageWithoutACounter: a store that counts no quotas says so.
func TestQuotasPageWithoutACounter(t *testing.T) {
	h, err := console.New(console.Options{Store: plainStore{memstore.New(nil)}, Authenticate: headerAuth, RefreshSeconds: -1})
	if err != nil {
		t.Fatal(err)
	}
	rec := do(h, http.MethodGet, "/quotas", [3]string{"ops", "admin", "acme"}, nil)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "counts no quotas") {
		t.Fatalf("GET /quotas = %d:\n%s", rec.Code, rec.Body)
	}
}

// plainStore is a console.Store and nothing more (no QuotaCounter).
type plainStore struct{ console.Store }
