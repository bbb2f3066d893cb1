package turn

import (
	"context"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/agenttool"
)

// agentTool is a sub-agent or a handoff target as setup resolved it and
// journaled it (agenttool.Tool): every drive of the run reads it from the
// journal, so a version registered later never changes the agent a run
// calls.
type agentTool = agenttool.Tool

// messageArg is the argument of a sub-agent or handoff call that carries
// the message the called agent is given as its user message.
const messageArg = agenttool.MessageArg

// resolveAgentRefs is setup's part for an agent's SubAgents and Handoffs,
// resolved through Bindings.AgentVersions and Bindings.Agents
// (agenttool.Resolver.Resolve).
func (r *run) resolveAgentRefs(ctx context.Context, a agent.Agent) (subs, handoffs []agentTool, err error) {
	return agenttool.Resolver{TenantID: r.tenantID, Versions: r.b.AgentVersions, Agents: r.b.Agents}.Resolve(ctx, a)
}

// agentToolCount is the number of tools the model sees for sub-agents and
// handoffs.
func (s *setupState) agentToolCount() int { return len(s.SubAgents) + len(s.Handoffs) }

// agentToolDefs fills defs (agentToolCount of them) with the tool
// definitions of the sub-agents, then the handoffs.
func (s *setupState) agentToolDefs(defs []bindings.ToolDefinition) {
	agenttool.Defs(defs, s.SubAgents, s.Handoffs)
}

// subAgent finds a sub-agent tool by the name the model called.
func (s *setupState) subAgent(name string) (agentTool, bool) {
	return agenttool.Find(s.SubAgents, name)
}

// handoff finds a handoff tool by the name the model called.
func (s *setupState) handoff(name string) (agentTool, bool) { return agenttool.Find(s.Handoffs, name) }

// normalizeAgentTools is normalizeSetup's part for a list of agentTool
// (agenttool.Normalize).
func normalizeAgentTools(ts []agentTool, own bool) []agentTool { return agenttool.Normalize(ts, own) }
