package bindings

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

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
	// Annotations are hints about the tool's behaviour, as an MCP server
	// describes its tools (nil: none given).
	Annotations *ToolAnnotations `json:"annotations,omitempty"`
	// Gate, when set, is a gate the tool's registry asks for by default
	// (an MCP source can gate the tools its server marks destructive). It
	// is a floor: the turn applies the stricter of it and the gate the
	// agent's policy and the tenant's floors give the tool.
	Gate *agent.ToolGate `json:"gate,omitempty"`
}

// ToolAnnotations are hints about what a tool does, with the meaning of
// MCP's tool annotations. They are hints, not guarantees: a host trusts
// them only as far as it trusts the tool's source.
type ToolAnnotations struct {
	// Title is a human-readable name of the tool.
	Title string `json:"title,omitempty"`
	// ReadOnlyHint reports that the tool does not change its environment.
	ReadOnlyHint bool `json:"readOnlyHint,omitempty"`
	// DestructiveHint reports, for a tool that is not read-only, whether it
	// may destroy or overwrite things (true) or only adds (false); nil
	// means not said, which MCP reads as true.
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	// IdempotentHint reports that calling the tool again with the same
	// arguments has no further effect.
	IdempotentHint bool `json:"idempotentHint,omitempty"`
	// OpenWorldHint reports whether the tool reaches outside entities (the
	// web, other systems); nil means not said, which MCP reads as true.
	OpenWorldHint *bool `json:"openWorldHint,omitempty"`
}

// Clone returns a deep copy of a (nil for nil).
func (a *ToolAnnotations) Clone() *ToolAnnotations {
	if a == nil {
		return nil
	}
	c := *a
	if a.DestructiveHint != nil {
		v := *a.DestructiveHint
		c.DestructiveHint = &v
	}
	if a.OpenWorldHint != nil {
		v := *a.OpenWorldHint
		c.OpenWorldHint = &v
	}
	return &c
}

// Destructive reports whether a tool with these annotations may destroy
// or overwrite things, with MCP's defaults: a tool not marked read-only is
// destructive unless its DestructiveHint says false. Nil annotations (none
// given) are not destructive: only a source that gives annotations makes
// that claim.
func (a *ToolAnnotations) Destructive() bool {
	if a == nil || a.ReadOnlyHint {
		return false
	}
	return a.DestructiveHint == nil || *a.DestructiveHint
}

// Ref returns "id@version".
func (d ToolDescriptor) Ref() string { return d.ID + "@" + d.Version }

// Clone returns a deep copy of d: its schemas, secrets, env, config (maps
// and slices at every depth), annotations and gate share no memory with d,
// so a catalog that keeps or hands out a descriptor cannot be changed
// through the caller's copy.
func (d ToolDescriptor) Clone() ToolDescriptor {
	d.InputSchema = slices.Clone(d.InputSchema)
	d.OutputSchema = slices.Clone(d.OutputSchema)
	d.Secrets = slices.Clone(d.Secrets)
	d.Env = maps.Clone(d.Env)
	if d.Config != nil {
		d.Config = cloneValue(d.Config).(map[string]any)
	}
	d.Annotations = d.Annotations.Clone()
	if d.Gate != nil {
		g := *d.Gate
		d.Gate = &g
	}
	return d
}

// cloneValue deep-copies the maps and slices of a JSON-like value.
func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = cloneValue(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = cloneValue(e)
		}
		return s
	case json.RawMessage:
		return slices.Clone(x)
	case []byte:
		return slices.Clone(x)
	case map[string]string:
		return maps.Clone(x)
	case []string:
		return slices.Clone(x)
	default:
		return v
	}
}

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
