// Package tighten merges the pieces of HITL and tenant policies so that
// the result is at least as strict as each: reviewer roles on their
// ladder, on-timeout actions, tool gates, caps, allow and deny lists, and
// whole tenant HITL specs. A merge can only tighten.
package tighten

import "github.com/kindgi/agents/agent"

// Reviewer roles, from least to most senior (turn exports them as
// RoleStandard, RoleSenior, RoleAdmin). A role not on this ladder ranks
// above every role on it (a custom role is taken to be stricter).
const (
	RoleStandard = "standard"
	RoleSenior   = "senior"
	RoleAdmin    = "admin"
)

// Actions when an approval times out, from least to most strict (turn
// exports them as OnTimeoutEscalate, OnTimeoutDeny, OnTimeoutFail).
const (
	OnTimeoutEscalate = "escalate"
	OnTimeoutDeny     = "deny"
	OnTimeoutFail     = "fail"
)

// RoleRank places a role on the reviewer ladder.
func RoleRank(role string) int {
	switch role {
	case "":
		return -1
	case RoleStandard:
		return 0
	case RoleSenior:
		return 1
	case RoleAdmin:
		return 2
	}
	return 3
}

// HigherRole returns the more senior of a and b; between two roles of the
// same rank (two custom roles) it keeps b, the tightening side.
func HigherRole(a, b string) string {
	if RoleRank(b) >= RoleRank(a) && b != "" {
		return b
	}
	return a
}

// NextRole is the role an escalation asks: one up the ladder (a custom
// role or admin stays).
func NextRole(role string) string {
	switch role {
	case "", RoleStandard:
		return RoleSenior
	case RoleSenior:
		return RoleAdmin
	}
	return role
}

// OnTimeoutRank places an on-timeout action on its ladder (-1: not an
// action).
func OnTimeoutRank(s string) int {
	switch s {
	case OnTimeoutEscalate:
		return 0
	case OnTimeoutDeny:
		return 1
	case OnTimeoutFail:
		return 2
	}
	return -1
}

// StricterOnTimeout returns the stricter known action of a and b ("" when
// neither is known).
func StricterOnTimeout(a, b string) string {
	if OnTimeoutRank(b) > OnTimeoutRank(a) {
		return b
	}
	if OnTimeoutRank(a) < 0 {
		return ""
	}
	return a
}

// StricterGate returns the stricter of two gates; for equally strict
// modes, the higher required role.
func StricterGate(a, b agent.ToolGate) agent.ToolGate {
	switch sa, sb := a.Mode.Strictness(), b.Mode.Strictness(); {
	case sb > sa:
		if RoleRank(a.RequiredRole) > RoleRank(b.RequiredRole) {
			b.RequiredRole = a.RequiredRole
		}
		return b
	case sa > sb:
		if RoleRank(b.RequiredRole) > RoleRank(a.RequiredRole) {
			a.RequiredRole = b.RequiredRole
		}
		return a
	}
	a.RequiredRole = HigherRole(a.RequiredRole, b.RequiredRole)
	return a
}
