package agent

import (
	"fmt"
	"unicode/utf8"
)

// capabilities checks the capability list and returns its copy.
func (c *checker) capabilities(caps []Capability) []Capability {
	if len(caps) == 0 {
		c.add("capabilities", `at least one capability is required (a turn routes on the first), for example [{"needs": [{"feature": "tool-use"}]}]`)
		return nil
	}
	out := make([]Capability, len(caps))
	for i, cp := range caps {
		if len(cp.Needs) == 0 {
			c.add(at("capabilities", i, "needs"), `a capability needs at least one feature, for example [{"feature": "tool-use"}]`)
			continue
		}
		needs := make([]Need, len(cp.Needs))
		for j, n := range cp.Needs {
			if isBlank(n.Feature) {
				c.add(at(at("capabilities", i, "needs"), j, "feature"), "feature is required: name a model feature such as tool-use, json-mode or vision")
			} else {
				c.utf8(at(at("capabilities", i, "needs"), j, "feature"), n.Feature)
			}
			needs[j] = n
		}
		out[i] = Capability{Needs: needs}
	}
	return out
}

// tools checks the tool references and returns their copy (never nil).
func (c *checker) tools(refs []ToolRef) []ToolRef {
	out := make([]ToolRef, len(refs))
	ids := newDupFinder(len(refs))
	for i, r := range refs {
		out[i] = r
		if m := idProblem(r.ID, "tool id", "acme.clause-search"); m != "" {
			c.add(at("tools", i, "id"), m)
		} else if j, dup := ids.seen(r.ID, i); dup {
			c.add(at("tools", i, "id"), fmt.Sprintf("tool %s is listed twice (first at %s); list each tool once with one version range", quote(r.ID), at("tools", j, "")))
		}
		switch {
		case isBlank(r.Version):
			c.add(at("tools", i, "version"), fmt.Sprintf("tool %s has no version range: a bare tool id is not allowed; pin a range such as ^1.0.0", quote(r.ID)))
		default:
			if err := checkRange(r.Version); err != nil {
				c.add(at("tools", i, "version"), fmt.Sprintf("version %s is not a valid npm-style range: %s; use a range such as 1.2.3, ^1.2.3, ~1.2.3 or >=1.0.0 <2.0.0", quote(r.Version), reason(err)))
			}
		}
	}
	return out
}

// retrieval checks the retrieval intents and returns their copy (never
// nil) with every Limit set.
func (c *checker) retrieval(ris []RetrievalIntent) []RetrievalIntent {
	out := make([]RetrievalIntent, len(ris))
	for i, r := range ris {
		if len(r.Types) == 0 {
			c.add(at("retrieval", i, "types"), `at least one memory fact type is required, for example ["acme.clause"]`)
		}
		types := make([]string, len(r.Types))
		for j, t := range r.Types {
			if isBlank(t) {
				c.add(at(at("retrieval", i, "types"), j, ""), "type must not be empty: name a memory fact type such as acme.clause")
			} else {
				c.utf8(at(at("retrieval", i, "types"), j, ""), t)
			}
			types[j] = t
		}
		switch r.Scope {
		case ScopeSameConversation, ScopeSameProject, ScopeTenant:
		case "":
			c.add(at("retrieval", i, "scope"), "scope is required: one of same-conversation, same-project, tenant")
		default:
			c.add(at("retrieval", i, "scope"), fmt.Sprintf("scope %s is not one of same-conversation, same-project, tenant", quote(r.Scope)))
		}
		limit := DefaultRetrievalLimit
		if r.Limit != nil {
			limit = *r.Limit
			if limit < 1 || limit > MaxRetrievalLimit {
				c.add(at("retrieval", i, "limit"), fmt.Sprintf("limit %d is out of range: use 1 to %d, or omit it for %d", limit, MaxRetrievalLimit, DefaultRetrievalLimit))
			}
		}
		switch r.Mode {
		case "", ModeKeyword, ModeSemantic, ModeBoth:
		default:
			c.add(at("retrieval", i, "mode"), fmt.Sprintf("mode %s is not one of keyword, semantic, both; omit it to list the latest facts of each type", quote(r.Mode)))
		}
		out[i] = RetrievalIntent{Types: types, Scope: r.Scope, Limit: &limit, Mode: r.Mode}
	}
	return out
}

// uniqueStrings checks a list of non-blank, unique strings (guardrail ids,
// tags) and returns its copy (nil when empty).
func (c *checker) uniqueStrings(path string, list []string, what string) []string {
	if len(list) == 0 {
		return nil
	}
	out := make([]string, len(list))
	seen := newDupFinder(len(list))
	for i, s := range list {
		out[i] = s
		switch {
		case isBlank(s):
			c.add(at(path, i, ""), what+" must not be empty")
		case !utf8.ValidString(s):
			c.add(at(path, i, ""), "must be valid UTF-8 text")
		default:
			if j, dup := seen.seen(s, i); dup {
				c.add(at(path, i, ""), fmt.Sprintf("%s %s is listed twice (first at %s); list it once", what, quote(s), at(path, j, "")))
			}
		}
	}
	return out
}
