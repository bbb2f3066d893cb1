package agent_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kindgi/agents/agent"
)

// triageSpec is an agent with a tool, two sub-agents and a handoff.
func triageSpec() agent.Spec {
	s := minimalSpec()
	s.ID = "acme.triage"
	s.Tools = []agent.ToolRef{{ID: "acme.lookup", Version: "^1.0.0"}}
	s.SubAgents = []agent.AgentRef{
		{ID: "acme.researcher", Version: "^1.0.0", Name: "research", Description: "Finds facts."},
		{ID: "acme.summarizer", Version: "~2.1.0"},
	}
	s.Handoffs = []agent.AgentRef{{ID: "acme.billing", Version: ">=1.0.0 <2.0.0", Name: "billing"}}
	return s
}

func TestDefineAgentRefsCopied(t *testing.T) {
	s := triageSpec()
	a := mustDefine(t, s)
	if diff := cmp.Diff(s.SubAgents, a.SubAgents); diff != "" {
		t.Errorf("SubAgents (-spec +agent):\n%s", diff)
	}
	if diff := cmp.Diff(s.Handoffs, a.Handoffs); diff != "" {
		t.Errorf("Handoffs (-spec +agent):\n%s", diff)
	}
	want := mustDefine(t, s)
	s.SubAgents[0].ID = "changed"
	s.SubAgents[1].Version = "changed"
	s.Handoffs[0].Name = "changed"
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("changing the Spec's refs changed the Agent (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(a, roundTrip(t, a)); diff != "" {
		t.Errorf("round trip mismatch (-defined +round-tripped):\n%s", diff)
	}
}

func TestDefineAgentRefsEmpty(t *testing.T) {
	for name, s := range map[string]agent.Spec{
		"nil": minimalSpec(),
		"empty": func() agent.Spec {
			s := minimalSpec()
			s.SubAgents = []agent.AgentRef{}
			s.Handoffs = []agent.AgentRef{}
			return s
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			a := mustDefine(t, s)
			if a.SubAgents != nil || a.Handoffs != nil {
				t.Errorf("SubAgents = %#v, Handoffs = %#v, want nil, nil", a.SubAgents, a.Handoffs)
			}
			if diff := cmp.Diff(a, roundTrip(t, a)); diff != "" {
				t.Errorf("round trip mismatch:\n%s", diff)
			}
		})
	}
}

// TestDefineSelfReference: an agent may call itself as a sub-agent (the
// depth bound stops the recursion) but may not hand off to itself.
func TestDefineSelfReference(t *testing.T) {
	s := minimalSpec()
	s.SubAgents = []agent.AgentRef{{ID: s.ID, Version: "^0.1.0", Name: "myself"}}
	a := mustDefine(t, s)
	if len(a.SubAgents) != 1 || a.SubAgents[0].ID != s.ID {
		t.Errorf("SubAgents = %+v, want the agent itself", a.SubAgents)
	}

	s = minimalSpec()
	s.Handoffs = []agent.AgentRef{{ID: s.ID, Version: "^0.1.0"}}
	_, err := agent.Define(s)
	issues := issuesOf(t, err)
	if diff := cmp.Diff([]string{"handoffs[0].id"}, paths(issues)); diff != "" {
		t.Fatalf("paths (-want +got):\n%s\nerror: %v", diff, err)
	}
	if !strings.Contains(issues[0].Message, "itself") {
		t.Errorf("message %q does not say the agent hands off to itself", issues[0].Message)
	}
}

func TestDefineAgentRefsIssues(t *testing.T) {
	runRuleTestsOn(t, func(testing.TB) agent.Spec { return triageSpec() }, []ruleTest{
		{"bad sub-agent id", func(s *agent.Spec) { s.SubAgents[1].ID = "Acme Summarizer" }, []string{"subAgents[1].id"}, "invalid"},
		{"missing handoff id", func(s *agent.Spec) { s.Handoffs[0].ID = "" }, []string{"handoffs[0].id"}, "required"},
		{"id too long", func(s *agent.Spec) { s.SubAgents[1].ID = strings.Repeat("a", agent.MaxIDLength+1) }, []string{"subAgents[1].id"}, "characters long"},
		{"bare version", func(s *agent.Spec) { s.SubAgents[0].Version = "" }, []string{"subAgents[0].version"}, "no version range"},
		{"bad range", func(s *agent.Spec) { s.SubAgents[1].Version = "^x.y" }, []string{"subAgents[1].version"}, "npm-style range"},
		{"bad handoff range", func(s *agent.Spec) { s.Handoffs[0].Version = "1.0.0 <<" }, []string{"handoffs[0].version"}, "npm-style range"},
		{"duplicate sub-agent", func(s *agent.Spec) {
			s.SubAgents = append(s.SubAgents, agent.AgentRef{ID: "acme.researcher", Version: "^2.0.0", Name: "research2"})
		}, []string{"subAgents[2].id"}, "twice"},
		{"duplicate handoff", func(s *agent.Spec) {
			s.Handoffs = append(s.Handoffs, agent.AgentRef{ID: "acme.billing", Version: "^1.0.0", Name: "billing2"})
		}, []string{"handoffs[1].id"}, "twice"},
		{"name with a space", func(s *agent.Spec) { s.SubAgents[0].Name = "Research Agent" }, []string{"subAgents[0].name"}, "tool name"},
		{"blank name", func(s *agent.Spec) { s.SubAgents[0].Name = "  " }, []string{"subAgents[0].name"}, "blank"},
		{"name too long", func(s *agent.Spec) { s.Handoffs[0].Name = strings.Repeat("b", agent.MaxIDLength+1) }, []string{"handoffs[0].name"}, "at most"},
		{"name upper case", func(s *agent.Spec) { s.Handoffs[0].Name = "Billing" }, []string{"handoffs[0].name"}, "tool name"},
		{"description not UTF-8", func(s *agent.Spec) { s.SubAgents[1].Description = "\xff" }, []string{"subAgents[1].description"}, "UTF-8"},
		{"sub-agent named as a tool", func(s *agent.Spec) { s.SubAgents[0].Name = "acme.lookup" }, []string{"subAgents[0].name"}, "tools[0].id"},
		{"sub-agent id equals a tool id", func(s *agent.Spec) { s.SubAgents[1].ID = "acme.lookup" }, []string{"subAgents[1].id"}, "unique"},
		{"handoff named as a sub-agent", func(s *agent.Spec) { s.Handoffs[0].Name = "research" }, []string{"handoffs[0].name"}, "subAgents[0].name"},
		{"handoff named as a sub-agent's id", func(s *agent.Spec) { s.Handoffs[0].Name = "acme.summarizer" }, []string{"handoffs[0].name"}, "subAgents[1].id"},
		{"two sub-agents under one name", func(s *agent.Spec) { s.SubAgents[1].Name = "research" }, []string{"subAgents[1].name"}, "two tools"},
		{"many at once", func(s *agent.Spec) {
			s.SubAgents[0].Version = "nope"
			s.SubAgents[1].Name = "acme.lookup"
			s.Handoffs[0].ID = "acme.triage"
		}, []string{"subAgents[0].version", "subAgents[1].name", "handoffs[0].id"}, "range"},
	})
}

// TestDefineAgentRefsBothLists: one agent may be a sub-agent and a handoff
// target at once, when the model sees two different names.
func TestDefineAgentRefsBothLists(t *testing.T) {
	s := triageSpec()
	s.Handoffs = append(s.Handoffs, agent.AgentRef{ID: "acme.researcher", Version: "^1.0.0", Name: "transfer_to_research"})
	a := mustDefine(t, s)
	if len(a.Handoffs) != 2 {
		t.Errorf("Handoffs = %+v, want two", a.Handoffs)
	}
}
