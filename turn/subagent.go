package turn

import (
	"context"
	"encoding/json"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn/internal/agenttool"
)

// agentTool is a sub-agent or a handoff target as setup resolved it and
// journaled it: the agent (id and the version its range resolved to) and
// what the model is told about it (tool name, description, input schema).
// Every drive of the run reads these from the journal, so a version
// registered later, or a registry that changed, never changes the agent a
// run calls.
type agentTool struct {
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

// messageArg is the argument of a sub-agent or handoff call that carries
// the message the called agent is given as its user message.
const messageArg = agenttool.MessageArg

// resolveAgentRefs is setup's part for an agent's SubAgents and Handoffs:
// each ref's range is resolved through Bindings.AgentVersions (the same
// npm-style rules as tool ranges, registry.ResolveVersion) and the agent
// at that version fetched through Bindings.Agents. An agent without refs
// gets nil lists (its setup journals exactly what it did before). Refs
// without both bindings are *agents.InvalidBindingsError; a ref with no
// version in its range, or whose agent the lookup does not find, is
// *agents.AgentNotFoundError naming the ref's id and range.
func (r *run) resolveAgentRefs(ctx context.Context, a agent.Agent) (subs, handoffs []agentTool, err error) {
	if len(a.SubAgents) == 0 && len(a.Handoffs) == 0 {
		return nil, nil, nil
	}
	if r.b.AgentVersions == nil || r.b.Agents == nil {
		return nil, nil, &agents.InvalidBindingsError{Reason: "agent " + a.Ref() + " has sub-agents or handoffs, and resolving them needs Bindings.AgentVersions and Bindings.Agents (registry.Agents.Versions and Lookup are one pair)"}
	}
	if subs, err = r.resolveRefs(ctx, a.SubAgents, agenttool.SubAgentSchema, agenttool.SubAgentDescription); err != nil {
		return nil, nil, err
	}
	if handoffs, err = r.resolveRefs(ctx, a.Handoffs, agenttool.HandoffSchema, agenttool.HandoffDescription); err != nil {
		return nil, nil, err
	}
	return subs, handoffs, nil
}

// resolveRefs resolves refs (see resolveAgentRefs), describing each to the
// model with schema and describe.
func (r *run) resolveRefs(ctx context.Context, refs []agent.AgentRef, schema func(agent.Agent) json.RawMessage, describe func(agent.AgentRef, agent.Agent) string) ([]agentTool, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	out := make([]agentTool, 0, len(refs))
	for _, ref := range refs {
		target, err := r.resolveRef(ctx, ref)
		if err != nil {
			return nil, err
		}
		out = append(out, agentTool{
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
func (r *run) resolveRef(ctx context.Context, ref agent.AgentRef) (agent.Agent, error) {
	notFound := &agents.AgentNotFoundError{ID: ref.ID, Version: ref.Version}
	versions, err := r.b.AgentVersions(ctx, r.tenantID, ref.ID)
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
	target, err := r.b.Agents(ctx, r.tenantID, ref.ID, v)
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

// agentToolCount is the number of tools the model sees for sub-agents and
// handoffs.
func (s *setupState) agentToolCount() int { return len(s.SubAgents) + len(s.Handoffs) }

// agentToolDefs fills defs (agentToolCount of them) with the tool
// definitions of the sub-agents, then the handoffs.
func (s *setupState) agentToolDefs(defs []bindings.ToolDefinition) {
	i := 0
	for _, list := range [2][]agentTool{s.SubAgents, s.Handoffs} {
		for _, t := range list {
			defs[i] = bindings.ToolDefinition{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
			i++
		}
	}
}

// subAgent finds a sub-agent tool by the name the model called.
func (s *setupState) subAgent(name string) (agentTool, bool) {
	for _, t := range s.SubAgents {
		if t.Name == name {
			return t, true
		}
	}
	return agentTool{}, false
}

// handoff finds a handoff tool by the name the model called.
func (s *setupState) handoff(name string) (agentTool, bool) {
	for _, t := range s.Handoffs {
		if t.Name == name {
			return t, true
		}
	}
	return agentTool{}, false
}

// normalizeAgentTools is normalizeSetup's part for a list of agentTool:
// as decoding its journaled JSON gives (empty: nil; schemas compacted as
// the journal stores them).
func normalizeAgentTools(ts []agentTool, own bool) []agentTool {
	if len(ts) == 0 {
		return nil
	}
	if !own {
		ts = append([]agentTool(nil), ts...)
	}
	for i := range ts {
		ts[i].InputSchema = compactJSON(ts[i].InputSchema)
	}
	return ts
}
