package agenttool

import (
	"context"
	"encoding/json"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn/internal/drive"
)

// Tool is a sub-agent or a handoff target as setup resolved it and
// journaled it: the agent (id and the version its range resolved to) and
// what the model is told about it (tool name, description, input schema).
// Every drive of the run reads these from the journal, so a version
// registered later, or a registry that changed, never changes the agent a
// run calls.
type Tool struct {
	// Name is the tool name the model sees (agent.AgentRef.ToolName).
	Name         string `json:"name"`
	AgentID      string `json:"agentId"`
	AgentVersion string `json:"agentVersion"`
	// Range is the ref's semver range, kept for the record (what the
	// resolved version was chosen from).
	Range       string          `json:"range"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// LookupFunc finds an agent of a tenant at a version (turn.AgentLookup).
type LookupFunc = func(ctx context.Context, tenantID, agentID, version string) (agent.Agent, error)

// VersionsFunc lists the versions of an agent a tenant may run
// (turn.AgentVersions).
type VersionsFunc = func(ctx context.Context, tenantID, agentID string) ([]string, error)

// Lookup finds agent id@version with find; a failure without a code of
// its own is *agents.AgentNotFoundError naming id and version.
func Lookup(ctx context.Context, find LookupFunc, tenantID, id, version string) (agent.Agent, error) {
	a, err := find(ctx, tenantID, id, version)
	if err != nil {
		if agents.CodeOf(err) == "" {
			return agent.Agent{}, &agents.AgentNotFoundError{ID: id, Version: version}
		}
		return agent.Agent{}, err
	}
	return a, nil
}

// LookupExact is Lookup that refuses an agent other than id@version
// (*agents.AgentVersionMismatchError, its subject what looked it up).
func LookupExact(ctx context.Context, find LookupFunc, subject, tenantID, id, version string) (agent.Agent, error) {
	a, err := Lookup(ctx, find, tenantID, id, version)
	if err == nil && (a.ID != id || a.Version != version) {
		return agent.Agent{}, &agents.AgentVersionMismatchError{Subject: subject + " of " + id + "@" + version, Expected: id + "@" + version, Actual: a.Ref()}
	}
	return a, err
}

// Resolver resolves an agent's SubAgents and Handoffs for one tenant.
type Resolver struct {
	TenantID string
	Versions VersionsFunc
	Agents   LookupFunc
}

// Resolve is setup's part for agent a's SubAgents and Handoffs: each ref's
// range is resolved through Versions (the same npm-style rules as tool
// ranges, registry.ResolveVersion) and the agent at that version fetched
// through Agents. An agent without refs gets nil lists (its setup journals
// exactly what it did before). Refs without both functions are
// *agents.InvalidBindingsError; a ref with no version in its range, or
// whose agent the lookup does not find, is *agents.AgentNotFoundError
// naming the ref's id and range.
func (rv Resolver) Resolve(ctx context.Context, a agent.Agent) (subs, handoffs []Tool, err error) {
	if len(a.SubAgents) == 0 && len(a.Handoffs) == 0 {
		return nil, nil, nil
	}
	if rv.Versions == nil || rv.Agents == nil {
		return nil, nil, &agents.InvalidBindingsError{Reason: "agent " + a.Ref() + " has sub-agents or handoffs, and resolving them needs Bindings.AgentVersions and Bindings.Agents (registry.Agents.Versions and Lookup are one pair)"}
	}
	if subs, err = rv.resolveRefs(ctx, a.SubAgents, SubAgentSchema, SubAgentDescription); err != nil {
		return nil, nil, err
	}
	if handoffs, err = rv.resolveRefs(ctx, a.Handoffs, HandoffSchema, HandoffDescription); err != nil {
		return nil, nil, err
	}
	return subs, handoffs, nil
}

// resolveRefs resolves refs (see Resolve), describing each to the model
// with schema and describe.
func (rv Resolver) resolveRefs(ctx context.Context, refs []agent.AgentRef, schema func(agent.Agent) json.RawMessage, describe func(agent.AgentRef, agent.Agent) string) ([]Tool, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	out := make([]Tool, 0, len(refs))
	for _, ref := range refs {
		target, err := rv.resolveRef(ctx, ref)
		if err != nil {
			return nil, err
		}
		out = append(out, Tool{
			Name:         ref.ToolName(),
			AgentID:      target.ID,
			AgentVersion: target.Version,
			Range:        ref.Version,
			Description:  describe(ref, target),
			InputSchema:  schema(target),
		})
	}
	return out, nil
}

// resolveRef picks the highest version of ref.ID in ref.Version the tenant
// may run and fetches the agent at it.
func (rv Resolver) resolveRef(ctx context.Context, ref agent.AgentRef) (agent.Agent, error) {
	notFound := &agents.AgentNotFoundError{ID: ref.ID, Version: ref.Version}
	versions, err := rv.Versions(ctx, rv.TenantID, ref.ID)
	if err != nil {
		if c := agents.CodeOf(err); c != "" && c != agents.CodeAgentNotFound {
			return agent.Agent{}, err // the store failed: its own code
		}
		return agent.Agent{}, notFound
	}
	v, err := registry.ResolveVersion(versions, ref.Version)
	if err != nil {
		return agent.Agent{}, notFound
	}
	target, err := rv.Agents(ctx, rv.TenantID, ref.ID, v)
	if err != nil {
		if c := agents.CodeOf(err); c != "" && c != agents.CodeAgentNotFound {
			return agent.Agent{}, err
		}
		return agent.Agent{}, notFound
	}
	if target.ID != ref.ID || target.Version != v {
		return agent.Agent{}, &agents.AgentVersionMismatchError{
			Subject:  "sub-agent lookup of " + ref.ID + "@" + v,
			Expected: ref.ID + "@" + v,
			Actual:   target.Ref(),
		}
	}
	return target, nil
}

// Defs fills defs (len(subs)+len(handoffs) of them) with the tool
// definitions of subs, then handoffs.
func Defs(defs []bindings.ToolDefinition, subs, handoffs []Tool) {
	i := 0
	for _, list := range [2][]Tool{subs, handoffs} {
		for _, t := range list {
			defs[i] = bindings.ToolDefinition{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
			i++
		}
	}
}

// Find finds the tool of ts the model called by name.
func Find(ts []Tool, name string) (Tool, bool) {
	for _, t := range ts {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// Normalize returns ts as decoding its journaled JSON gives (empty: nil;
// schemas compacted as the journal stores them), in place when own says
// the caller owns ts, else in a copy.
func Normalize(ts []Tool, own bool) []Tool {
	if len(ts) == 0 {
		return nil
	}
	if !own {
		ts = append([]Tool(nil), ts...)
	}
	for i := range ts {
		if len(ts[i].InputSchema) == 0 {
			ts[i].InputSchema = nil
		} else {
			ts[i].InputSchema = drive.Journaled(ts[i].InputSchema)
		}
	}
	return ts
}

// SplitArguments splits a sub-agent call's JSON arguments into the message
// (MessageArg) the child is given as its user message and the other
// arguments, its prompt parameters (nil when there are none).
func SplitArguments(raw json.RawMessage) (msg string, params map[string]any, err error) {
	if err := json.Unmarshal(raw, &params); err != nil {
		return "", nil, err
	}
	msg, _ = params[MessageArg].(string)
	delete(params, MessageArg)
	if len(params) == 0 {
		params = nil
	}
	return msg, params, nil
}
