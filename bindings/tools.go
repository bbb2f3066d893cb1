package bindings

import (
	"context"
	"encoding/json"

	"github.com/kindgi/agents/agent"
)

// ToolDescriptor describes one version of a tool.
type ToolDescriptor struct {
	ID          string `json:"id"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
	// InputSchema and OutputSchema are JSON Schemas (draft 2020-12); empty
	// means any JSON object.
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Secrets names the secrets the tool needs; the turn resolves them per
	// call through the SecretResolver and passes them in CallContext.
	Secrets []string `json:"secrets,omitempty"`
	// Env and Config are passed to every call of the tool.
	Env    map[string]string `json:"env,omitempty"`
	Config map[string]any    `json:"config,omitempty"`
}

// Ref returns "id@version".
func (d ToolDescriptor) Ref() string { return d.ID + "@" + d.Version }

// CallContext is what a tool call carries besides its input.
type CallContext struct {
	TenantID       string `json:"tenantId"`
	RunID          string `json:"runId"`
	ConversationID string `json:"conversationId,omitempty"`
	AgentID        string `json:"agentId,omitempty"`
	// RequestID identifies the call and is its idempotency key: a call
	// interrupted by a crash is sent again with the same RequestID, so a
	// tool with side effects must perform them at most once per RequestID.
	RequestID   string            `json:"requestId"`
	PrincipalID string            `json:"principalId,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Secrets     map[string]string `json:"secrets,omitempty"`
	Config      map[string]any    `json:"config,omitempty"`
}

// ToolHandler runs one tool version. It returns the tool's output as JSON.
type ToolHandler func(ctx context.Context, input json.RawMessage, call CallContext) (json.RawMessage, error)

// TenantTools is one tenant's view of the tool registry.
//
// Resolve returns the highest registered version satisfying ref.Version (an
// npm-style range; an exact version resolves to itself): an unknown id is
// *agents.UnresolvedToolError, no satisfying version
// *agents.ToolVersionUnresolvableError naming the versions that exist.
// Invoke runs the exact version of d; a failure of the tool itself is
// returned as an error (the turn reports it to the model as a tool error).
type TenantTools interface {
	Resolve(ctx context.Context, ref agent.ToolRef) (ToolDescriptor, error)
	Invoke(ctx context.Context, d ToolDescriptor, input json.RawMessage, call CallContext) (json.RawMessage, error)
}

// ToolRegistry hands out per-tenant tool views; a tenant never sees another
// tenant's tools.
type ToolRegistry interface {
	ForTenant(tenantID string) TenantTools
}
