package memstore_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
)

func TestKeysSignAndVerify(t *testing.T) {
	ctx := t.Context()
	k := memstore.NewKeys(nil)
	id, priv, err := k.SigningKey(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	id2, _, _ := k.SigningKey(ctx, "t1")
	if id2 != id {
		t.Fatalf("a tenant's key changed: %s then %s", id, id2)
	}
	pub, err := k.PublicKey(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("provenance")
	if !ed25519.Verify(pub, msg, ed25519.Sign(priv, msg)) {
		t.Fatal("signature does not verify with the public key")
	}
	other, _, _ := k.SigningKey(ctx, "t2")
	if other == id {
		t.Fatal("two tenants share a key id")
	}
	priv[0] ^= 0xff // the caller's copy only
	_, again, _ := k.SigningKey(ctx, "t1")
	if !ed25519.Verify(pub, msg, ed25519.Sign(again, msg)) {
		t.Fatal("mutating a returned key changed the stored key")
	}
	_, err = k.PublicKey(ctx, "nope")
	if agents.CodeOf(err) != agents.CodePersistence || !errors.Is(err, memstore.ErrUnknownKey) {
		t.Fatalf("unknown key id: %v", err)
	}
	if _, _, err := k.SigningKey(ctx, ""); agents.CodeOf(err) != agents.CodeInvalidMessage {
		t.Fatalf("empty tenant: %v", err)
	}
}

func TestKeysDeterministicWithSeed(t *testing.T) {
	ctx := t.Context()
	a, b := memstore.NewKeys([]byte("seed")), memstore.NewKeys([]byte("seed"))
	ida, pa, _ := a.SigningKey(ctx, "t1")
	idb, pb, _ := b.SigningKey(ctx, "t1")
	if ida != idb || !pa.Equal(pb) {
		t.Fatal("the same seed gave different keys")
	}
	_, pc, _ := memstore.NewKeys([]byte("other")).SigningKey(ctx, "t1")
	_, pr1, _ := memstore.NewKeys(nil).SigningKey(ctx, "t1")
	_, pr2, _ := memstore.NewKeys(nil).SigningKey(ctx, "t1")
	if pc.Equal(pa) || pr1.Equal(pr2) {
		t.Fatal("different seeds (or random keys) gave equal keys")
	}
}

func TestPolicies(t *testing.T) {
	ctx := t.Context()
	maxSteps := 3
	outage := errors.New("policy service down")
	p := memstore.Policies{
		ByTenant: map[string]map[string]bindings.TenantPolicy{
			"t1": {bindings.PolicyKindModel: {AllowProviders: []string{"scripted"}, MaxSteps: &maxSteps},
				bindings.PolicyKindHitl: {Hitl: &bindings.HitlSpec{ToolFloors: map[string]agent.ToolGate{"*": {Mode: agent.GateAlwaysAsk}}}}},
		},
		Fail: func(req bindings.PolicyRequest) error {
			if req.TenantID == "down" {
				return &agents.TenantPolicyUnavailableError{PolicyKind: req.Kind, Err: outage}
			}
			return nil
		},
	}
	got, err := p.Evaluate(ctx, bindings.PolicyRequest{TenantID: "t1", Kind: bindings.PolicyKindModel})
	if err != nil || *got.MaxSteps != 3 || got.AllowProviders[0] != "scripted" {
		t.Fatalf("model policy: %+v %v", got, err)
	}
	*got.MaxSteps = 99
	got.AllowProviders[0] = "changed"
	again, _ := p.Evaluate(ctx, bindings.PolicyRequest{TenantID: "t1", Kind: bindings.PolicyKindModel})
	if *again.MaxSteps != 3 || again.AllowProviders[0] != "scripted" {
		t.Fatal("mutating a returned policy changed the registry")
	}
	h, _ := p.Evaluate(ctx, bindings.PolicyRequest{TenantID: "t1", Kind: bindings.PolicyKindHitl})
	h.Hitl.ToolFloors["x"] = agent.ToolGate{Mode: agent.GateNeverAsk}
	h2, _ := p.Evaluate(ctx, bindings.PolicyRequest{TenantID: "t1", Kind: bindings.PolicyKindHitl})
	if len(h2.Hitl.ToolFloors) != 1 {
		t.Fatal("mutating returned tool floors changed the registry")
	}
	if z, err := p.Evaluate(ctx, bindings.PolicyRequest{TenantID: "t2", Kind: bindings.PolicyKindModel}); err != nil || !cmp.Equal(z, bindings.TenantPolicy{}) {
		t.Fatalf("tenant without a policy: %+v %v", z, err)
	}
	_, err = p.Evaluate(ctx, bindings.PolicyRequest{TenantID: "down", Kind: bindings.PolicyKindHitl})
	var tpu *agents.TenantPolicyUnavailableError
	if !errors.As(err, &tpu) || tpu.PolicyKind != bindings.PolicyKindHitl || !errors.Is(err, outage) {
		t.Fatalf("injected failure: %v", err)
	}
}

func TestGuardrailsAndChecks(t *testing.T) {
	ctx := t.Context()
	g := memstore.Guardrails{
		ByTenant: map[string]map[string]bindings.Guardrail{"t1": {"no-pii": {ID: "no-pii", CheckID: "pii-strict", Action: bindings.ActionHalt}}},
		Shared:   map[string]bindings.Guardrail{"no-pii": {ID: "no-pii", CheckID: "pii", Action: bindings.ActionLog}, "tone": {ID: "tone", CheckID: "tone"}},
	}
	for _, tc := range []struct{ tenant, id, check string }{
		{"t1", "no-pii", "pii-strict"}, {"t2", "no-pii", "pii"}, {"t1", "tone", "tone"},
	} {
		gr, err := g.Guardrail(ctx, tc.tenant, tc.id)
		if err != nil || gr.CheckID != tc.check {
			t.Errorf("%s/%s: %+v %v, want check %s", tc.tenant, tc.id, gr, err, tc.check)
		}
	}
	if _, err := g.Guardrail(ctx, "t1", "missing"); agents.CodeOf(err) != agents.CodeUnresolvedGuardrail {
		t.Fatalf("unknown guardrail: %v", err)
	}
	pass := bindings.CheckFunc(func(_ context.Context, _ json.RawMessage, _ bindings.RunTrace) (bindings.CheckResult, error) {
		return bindings.CheckResult{Passed: true}, nil
	})
	c := memstore.Checks{"pii": pass}
	if _, ok := c.Check("pii"); !ok {
		t.Fatal("registered check not found")
	}
	if _, ok := c.Check("nope"); ok {
		t.Fatal("unknown check found")
	}
}

func TestSecrets(t *testing.T) {
	s := memstore.Secrets{"t1": {"smtp": "hunter2"}}
	if v, err := s.ResolveSecret(t.Context(), "t1", "smtp"); err != nil || v != "hunter2" {
		t.Fatalf("ResolveSecret: %q %v", v, err)
	}
	for _, tc := range [][2]string{{"t2", "smtp"}, {"t1", "other"}} {
		_, err := s.ResolveSecret(t.Context(), tc[0], tc[1])
		if agents.CodeOf(err) != agents.CodePersistence || !errors.Is(err, memstore.ErrSecretNotFound) {
			t.Fatalf("%v: %v", tc, err)
		}
	}
}

func TestAllow(t *testing.T) {
	a := memstore.AllowTools(map[string][]string{"alice": {"acme.search", "acme.send-email@2.1.0"}})
	for _, tc := range []struct {
		who, tool, version string
		want               bool
	}{
		{"alice", "acme.search", "1.0.0", true},
		{"alice", "acme.send-email", "2.1.0", true},
		{"alice", "acme.send-email", "2.1.1", false},
		{"bob", "acme.search", "1.0.0", false},
	} {
		d, err := a.Authorize(t.Context(), bindings.AuthzRequest{TenantID: "t", Principal: bindings.Principal{ID: tc.who}, ToolID: tc.tool, ToolVersion: tc.version})
		if err != nil || d.Allowed != tc.want || (!d.Allowed && d.Reason == "") {
			t.Errorf("%s %s@%s: %+v %v, want allowed=%v with a reason when denied", tc.who, tc.tool, tc.version, d, err, tc.want)
		}
	}
	if d, _ := memstore.Allow(nil).Authorize(t.Context(), bindings.AuthzRequest{}); d.Allowed {
		t.Fatal("a nil Allow allowed a call")
	}
}
