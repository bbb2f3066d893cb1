package agent

import "fmt"

// agentRefs checks the sub-agent and handoff references and returns their
// copies (nil when empty, so that an Agent round-trips through JSON, where
// both lists are omitted when empty).
//
// The rules, with paths such as subAgents[1].version:
//   - id follows the agent id syntax, and version is a non-empty npm-style
//     range, checked exactly as a ToolRef's;
//   - an agent is referenced at most once per list (the same id twice in
//     subAgents, or twice in handoffs, is refused; the same agent may be
//     both a sub-agent and a handoff target under two different names);
//   - name, when given, is valid as a tool name: the tool id syntax, which
//     every provider accepts once its name encoding is applied, so the
//     turn never has to rename a tool the model sees;
//   - every name the model sees (each tool's id, each ref's ToolName) is
//     unique across tools, sub-agents and handoffs;
//   - an agent may not hand off to itself (the turn would continue as the
//     same agent, spending depth for nothing); it may call itself as a
//     sub-agent, a recursion that Bindings.MaxAgentDepth bounds.
//
// name and description must be valid UTF-8.
func (c *checker) agentRefs(selfID string, tools []ToolRef, subs, handoffs []AgentRef) ([]AgentRef, []AgentRef) {
	if len(subs) == 0 && len(handoffs) == 0 {
		return nil, nil
	}
	// names maps each name the model sees to the path of its first use.
	names := make(map[string]string, len(tools)+len(subs)+len(handoffs))
	for i, t := range tools {
		if idProblem(t.ID, "", "") != "" {
			continue // reported by tools
		}
		if _, ok := names[t.ID]; !ok {
			names[t.ID] = at("tools", i, "id")
		}
	}
	return c.refList("subAgents", "", subs, names), c.refList("handoffs", selfID, handoffs, names)
}

// refList checks one list of references (subAgents or handoffs) against
// the rules of agentRefs; selfID, when not empty, is an id the list may
// not hold. names collects the tool names seen so far.
func (c *checker) refList(list, selfID string, refs []AgentRef, names map[string]string) []AgentRef {
	if len(refs) == 0 {
		return nil
	}
	out := make([]AgentRef, len(refs))
	ids := newDupFinder(len(refs))
	what := "sub-agent"
	if list == "handoffs" {
		what = "handoff target"
	}
	for i, r := range refs {
		out[i] = r
		idOK := false
		if m := idProblem(r.ID, what+" id", "acme.researcher"); m != "" {
			c.add(at(list, i, "id"), m)
		} else if j, dup := ids.seen(r.ID, i); dup {
			c.add(at(list, i, "id"), fmt.Sprintf("agent %s is listed twice in %s (first at %s); list each agent once with one version range", quote(r.ID), list, at(list, j, "")))
		} else if selfID != "" && r.ID == selfID {
			c.add(at(list, i, "id"), fmt.Sprintf("agent %s cannot hand off to itself: the turn already runs as this agent; remove the handoff (an agent may call itself as a sub-agent)", quote(r.ID)))
		} else {
			idOK = true
		}
		switch {
		case isBlank(r.Version):
			c.add(at(list, i, "version"), fmt.Sprintf("%s %s has no version range: a bare agent id is not allowed; pin a range such as ^1.0.0", what, quote(r.ID)))
		default:
			if err := checkRange(r.Version); err != nil {
				c.add(at(list, i, "version"), fmt.Sprintf("version %s is not a valid npm-style range: %s; use a range such as 1.2.3, ^1.2.3, ~1.2.3 or >=1.0.0 <2.0.0", quote(r.Version), reason(err)))
			}
		}
		nameOK := idOK
		if r.Name != "" {
			nameOK = false
			if m := toolNameProblem(r.Name); m != "" {
				c.add(at(list, i, "name"), m)
			} else {
				nameOK = true
			}
		}
		c.utf8(at(list, i, "description"), r.Description)
		if !nameOK {
			continue
		}
		name := r.ToolName()
		field := "id"
		if r.Name != "" {
			field = "name"
		}
		if first, taken := names[name]; taken {
			c.add(at(list, i, field), fmt.Sprintf("the model would see two tools named %s (the other at %s): tool ids, sub-agent and handoff names must be unique; give this %s a distinct name", quote(name), first, what))
			continue
		}
		names[name] = at(list, i, field)
	}
	return out
}

// toolNameProblem returns what is wrong with the name a sub-agent or
// handoff is shown to the model under, or "". The rule is the tool id
// syntax: at most MaxIDLength (the turn's MaxToolNameLength) bytes of
// lowercase letters, digits, '.', '_' and '-'. Providers that allow fewer
// characters (^[a-zA-Z0-9_-]{1,64}$) encode these names reversibly; a
// space, an upper-case letter or punctuation some provider would refuse
// is refused here instead.
func toolNameProblem(s string) string {
	switch {
	case isBlank(s):
		return "name must not be blank: omit it to show the agent under its id, or use " + idSyntax + " (for example research)"
	case len(s) > MaxIDLength:
		return fmt.Sprintf("name is %d characters long; a tool name has at most %d", len(s), MaxIDLength)
	case !idPattern.MatchString(s):
		return fmt.Sprintf("name %s is not valid as a tool name: use %s (for example research)", quote(s), idSyntax)
	}
	return ""
}
