package main

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
)

// TestQuotasShow seeds a tenant's quota use and runs the built binary:
// quotas show prints each quota's use against its limit with the time
// its window frees (and as JSON), and refuses a missing tenant.
func TestQuotasShow(t *testing.T) {
	store, url, tenant := cliStore(t, "quotas-cli-")
	ctx := context.Background()
	calls := bindings.Quota{Name: "calls-per-hour", Scope: bindings.QuotaModelCalls, Limit: 60, WindowSeconds: 3600}
	email := bindings.Quota{Name: "send-email", Scope: bindings.QuotaToolCalls, ToolID: "acme.send-email", Limit: 10, WindowSeconds: 3600, OnExceeded: bindings.QuotaWait}
	first := time.Now().UTC().Truncate(time.Microsecond)
	for i, q := range []bindings.Quota{calls, calls, email} {
		if _, err := store.Take(ctx, bindings.QuotaTakeInput{TenantID: tenant, Quota: q, Unit: "u" + string(rune('a'+i)), Amount: 1, Now: first.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	db := []string{"--database-url", url, "--tenant", tenant}

	r := kindgi(t, append([]string{"quotas", "show"}, db...)...)
	if r.code != 0 {
		t.Fatalf("quotas show: exit %d stderr %q", r.code, r.stderr)
	}
	frees := first.Add(time.Hour).Format("2006-01-02T15:04:05.000Z")
	for _, want := range []string{
		`(?m)^calls-per-hour\s+model-calls\s+-\s+2\s+60\s+1h0m0s\s+fail\s+` + regexp.QuoteMeta(frees) + `$`,
		`(?m)^send-email\s+tool-calls\s+acme\.send-email\s+1\s+10\s+1h0m0s\s+wait\s+\S+$`,
	} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("quotas show: no line matching %s in\n%s", want, r.stdout)
		}
	}
	r = kindgi(t, append([]string{"quotas", "show", "--json"}, db...)...)
	var views []quotaView
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &views) != nil || len(views) != 2 || views[0].Used != 2 || views[0].Remaining != 58 || !views[0].FreesAt.Equal(first.Add(time.Hour)) {
		t.Fatalf("quotas show --json: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r = kindgi(t, "quotas", "show", "--database-url", url); r.code != 2 {
		t.Errorf("quotas show without --tenant: exit %d, want 2", r.code)
	}
}
