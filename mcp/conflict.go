package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
)

// ConflictError reports a tool id that two of a tenant's tools would
// share, so that the id would not say which one a turn calls: a server
// whose prefix nests with another server's of the tenant (refused by
// AddServer), or a listed tool whose id the tenant already has (refused
// when the server's tools are listed, while the server's other tools keep
// working). Its code is invalid-bindings.
type ConflictError struct {
	// TenantID is the tenant whose ids would meet.
	TenantID string
	// ToolID is the id both would have; for two servers refused by
	// AddServer, "<longer prefix>.*": every id of that form could be a
	// tool of either.
	ToolID string
	// Server is the prefix of the server refused, or of the server whose
	// tool is refused.
	Server string
	// Other is what already has the id: the prefix of another server of the
	// tenant, Server itself when the server lists one tool name twice, or
	// "" when the id is a tool of Options.Registry.
	Other string
}

// Error implements the error interface.
func (e *ConflictError) Error() string {
	var other string
	switch e.Other {
	case "":
		other = "a tool of the tenant's registry"
	case e.Server:
		other = "listed twice by that server"
	default:
		other = "also an id of MCP server " + e.Other
	}
	return fmt.Sprintf("invalid bindings: mcp: tenant %q: tool id %s of MCP server %s is %s", e.TenantID, e.ToolID, e.Server, other)
}

// Code returns invalid-bindings.
func (e *ConflictError) Code() string { return agents.CodeInvalidBindings }

// nestedPrefix returns the prefix of byPrefix that nests with p — one is
// the other followed by a dot, so that "<shorter>.<name>" and
// "<longer>.<rest>" can be one id — or "".
func nestedPrefix(byPrefix map[string]*conn, p string) string {
	for q := range byPrefix {
		if strings.HasPrefix(q, p+".") || strings.HasPrefix(p, q+".") {
			return q
		}
	}
	return ""
}

// prefixConflict is the error of AddServer refusing prefix p of tenant
// for nesting with the prefix other.
func prefixConflict(tenant, p, other string) *ConflictError {
	longer := other
	if len(p) > len(other) {
		longer = p
	}
	return &ConflictError{TenantID: tenant, ToolID: longer + ".*", Server: p, Other: other}
}

// registryHas reports whether the tenant's registry view tt (nil: none)
// has a tool id: one it resolves at some version, or whose versions it
// names while refusing a range. An error other than "unresolved" (a done
// ctx, a registry that cannot be reached) is returned: the id cannot be
// told free.
func registryHas(ctx context.Context, tt bindings.TenantTools, id string) (bool, error) {
	if tt == nil {
		return false, nil
	}
	_, err := tt.Resolve(ctx, agent.ToolRef{ID: id, Version: "*"})
	var unresolved *agents.UnresolvedToolError
	var version *agents.ToolVersionUnresolvableError
	switch {
	case err == nil, errors.As(err, &version):
		return true, nil
	case errors.As(err, &unresolved):
		return false, nil
	}
	return false, err
}
