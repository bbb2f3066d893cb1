package tighten_test

import (
	"testing"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/turn"
	"github.com/kindgi/agents/turn/internal/tighten"
)

// TestLaddersAreTurns pins the ladders as turn documents them: its
// exported roles and on-timeout actions, by value, in order.
func TestLaddersAreTurns(t *testing.T) {
	roles := []string{"standard", "senior", "admin", "custom"}
	if turn.RoleStandard != roles[0] || turn.RoleSenior != roles[1] || turn.RoleAdmin != roles[2] {
		t.Errorf("turn's roles are %q, %q, %q; want %q", turn.RoleStandard, turn.RoleSenior, turn.RoleAdmin, roles[:3])
	}
	if turn.OnTimeoutEscalate != "escalate" || turn.OnTimeoutDeny != "deny" || turn.OnTimeoutFail != "fail" {
		t.Errorf("turn's on-timeout actions are %q, %q, %q", turn.OnTimeoutEscalate, turn.OnTimeoutDeny, turn.OnTimeoutFail)
	}
	for i, r := range roles {
		if got := tighten.RoleRank(r); got != i {
			t.Errorf("RoleRank(%q) = %d, want %d", r, got, i)
		}
	}
	for i, a := range []string{turn.OnTimeoutEscalate, turn.OnTimeoutDeny, turn.OnTimeoutFail} {
		if got := tighten.OnTimeoutRank(a); got != i {
			t.Errorf("OnTimeoutRank(%q) = %d, want %d", a, got, i)
		}
	}
	for from, want := range map[string]string{"": turn.RoleSenior, turn.RoleStandard: turn.RoleSenior, turn.RoleSenior: turn.RoleAdmin, turn.RoleAdmin: turn.RoleAdmin, "custom": "custom"} {
		if got := tighten.NextRole(from); got != want {
			t.Errorf("NextRole(%q) = %q, want %q", from, got, want)
		}
	}
}

// TestStricterGate pins that the stricter mode wins and keeps the higher
// required role of the two.
func TestStricterGate(t *testing.T) {
	ask := agent.ToolGate{Mode: agent.GateAlwaysAsk}
	never := agent.ToolGate{Mode: agent.GateNeverAsk, RequiredRole: turn.RoleAdmin}
	got := tighten.StricterGate(ask, never)
	if got.Mode != agent.GateAlwaysAsk || got.RequiredRole != turn.RoleAdmin {
		t.Errorf("StricterGate = %+v, want always_ask with role admin", got)
	}
	if got := tighten.StricterGate(never, ask); got.Mode != agent.GateAlwaysAsk || got.RequiredRole != turn.RoleAdmin {
		t.Errorf("StricterGate (swapped) = %+v, want always_ask with role admin", got)
	}
}

// TestMinPtrCopies pins that the smaller cap is a copy, not an alias.
func TestMinPtrCopies(t *testing.T) {
	a, b := 3, 5
	got := tighten.MinPtr(&a, &b)
	if got == &a || *got != 3 {
		t.Errorf("MinPtr(3, 5) = %v (alias %v), want a copy of 3", *got, got == &a)
	}
	if tighten.MinPtr[int](nil, nil) != nil {
		t.Error("MinPtr(nil, nil) is a cap")
	}
}
