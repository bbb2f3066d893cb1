package turn_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// defineAgent defines spec or fails the test.
func defineAgent(t testing.TB, spec agent.Spec) agent.Agent {
	t.Helper()
	a, err := agent.Define(spec)
	if err != nil {
		t.Fatalf("Define %s: %v", spec.ID, err)
	}
	return a
}

// researchAgent is a sub-agent at version v with a required prompt
// parameter and an optional one.
func researchAgent(t testing.TB, v, description string) agent.Agent {
	return defineAgent(t, agent.Spec{
		ID: "acme.research", Version: v, Name: "Research", Description: description,
		Instructions: "You research {{ topic }} for a lawyer.",
		Capabilities: toolUse,
		Parameters: []agent.PromptParameter{
			{Name: "topic", Type: agent.TypeString, Description: "what to research"},
			{Name: "depth", Type: agent.TypeInteger, Optional: true},
		},
	})
}

func billingAgent(t testing.TB, v string) agent.Agent {
	return defineAgent(t, agent.Spec{ID: "acme.billing", Version: v, Name: "Billing", Description: "answers billing questions", Instructions: "You answer billing questions.", Capabilities: toolUse})
}

var toolUse = []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}}

// agentRegistry registers as, for Bindings.Agents and AgentVersions.
func agentRegistry(t testing.TB, as ...agent.Agent) *registry.Agents {
	t.Helper()
	r, err := registry.NewAgents(as...)
	if err != nil {
		t.Fatalf("NewAgents: %v", err)
	}
	return r
}

// withAgentRefs gives the drafter a research sub-agent (range ^1.0.0) and
// a billing handoff.
func withAgentRefs(s *agent.Spec) {
	s.SubAgents = []agent.AgentRef{{ID: "acme.research", Version: "^1.0.0"}}
	s.Handoffs = []agent.AgentRef{{ID: "acme.billing", Version: "1.x", Name: "to_billing"}}
}

// TestSubAgentsAndHandoffsAreTools: setup resolves each ref's range to the
// highest version in it, and the model sees each sub-agent and handoff as
// a tool, after the agent's tools: the sub-agent with a required message
// and the child's prompt parameters, the handoff with an optional message.
func TestSubAgentsAndHandoffsAreTools(t *testing.T) {
	f := newFixture(t, []scripted.Response{scripted.Say("No help needed.")}, withAgentRefs)
	reg := agentRegistry(t, researchAgent(t, "1.0.0", "old"), researchAgent(t, "1.2.0", "finds case law"), researchAgent(t, "2.0.0", "next"), billingAgent(t, "1.0.0"))
	b := f.bindings()
	b.Agents, b.AgentVersions = reg.Lookup, reg.Versions
	res := f.mustInvoke(t, b, "Draft an NDA.")
	if res.Status != turn.StatusCompleted {
		t.Fatalf("status %s", res.Status)
	}
	reqs := f.provider.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls, want 1", len(reqs))
	}
	var names []string
	for _, d := range reqs[0].Tools {
		names = append(names, d.Name)
	}
	if diff := cmp.Diff([]string{"acme.clause-search", "acme.send-email", "acme.research", "to_billing"}, names); diff != "" {
		t.Fatalf("tool names (-want +got):\n%s", diff)
	}
	research, billing := reqs[0].Tools[2], reqs[0].Tools[3]
	if research.Description != "finds case law" {
		t.Errorf("sub-agent description %q, want the resolved version's", research.Description)
	}
	var schema struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
		Required             []string `json:"required"`
		AdditionalProperties bool     `json:"additionalProperties"`
	}
	if err := json.Unmarshal(research.InputSchema, &schema); err != nil {
		t.Fatalf("sub-agent schema: %v", err)
	}
	if diff := cmp.Diff([]string{"message", "topic"}, schema.Required); diff != "" {
		t.Errorf("required (-want +got):\n%s", diff)
	}
	if schema.Properties["message"].Type != "string" || schema.Properties["topic"].Type != "string" || schema.Properties["depth"].Type != "integer" {
		t.Errorf("properties %v", schema.Properties)
	}
	schema.Required, schema.Properties = nil, nil
	if err := json.Unmarshal(billing.InputSchema, &schema); err != nil {
		t.Fatalf("handoff schema: %v", err)
	}
	if len(schema.Required) != 0 || schema.Properties["message"].Type != "string" || len(schema.Properties) != 1 {
		t.Errorf("handoff schema %s", billing.InputSchema)
	}
	if !strings.Contains(billing.Description, "answers billing questions") {
		t.Errorf("handoff description %q", billing.Description)
	}

	setup := f.journal(res.RunID)[0]
	if setup.Key != turn.NodeSetup {
		t.Fatalf("first entry %s", setup.Key)
	}
	var s struct {
		SubAgents []struct{ Name, AgentID, AgentVersion, Range string } `json:"subAgents"`
		Handoffs  []struct{ Name, AgentID, AgentVersion, Range string } `json:"handoffs"`
	}
	if err := json.Unmarshal(setup.Output, &s); err != nil {
		t.Fatalf("setup output: %v", err)
	}
	if len(s.SubAgents) != 1 || s.SubAgents[0].AgentVersion != "1.2.0" || s.SubAgents[0].Range != "^1.0.0" || s.SubAgents[0].Name != "acme.research" {
		t.Errorf("journaled sub-agents %+v", s.SubAgents)
	}
	if len(s.Handoffs) != 1 || s.Handoffs[0].AgentVersion != "1.0.0" || s.Handoffs[0].Name != "to_billing" {
		t.Errorf("journaled handoffs %+v", s.Handoffs)
	}
}

// TestResolvedAgentsAreJournaled: a resumed run offers the sub-agents its
// setup resolved, even when the resuming process can no longer resolve
// them (a new version registered, the version bindings gone).
func TestResolvedAgentsAreJournaled(t *testing.T) {
	f := newFixture(t, emailThenAnswer(), withAgentRefs)
	reg := agentRegistry(t, researchAgent(t, "1.0.0", "first"), billingAgent(t, "1.0.0"))
	b := f.bindings()
	b.Agents, b.AgentVersions = reg.Lookup, reg.Versions
	res := f.park(t, b, "Send the draft.")
	f.decide(res.Approvals, true)
	other := f.bindings() // another process: no agent registry at all
	if _, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, other); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	reqs := f.provider.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	if diff := cmp.Diff(reqs[0].Tools, reqs[1].Tools); diff != "" {
		t.Errorf("resumed call's tools differ (-first +resumed):\n%s", diff)
	}
	if got := reqs[1].Tools[2].Description; got != "first" {
		t.Errorf("resumed sub-agent description %q, want the journaled one", got)
	}
}

// TestUnresolvableAgentRef: a ref whose range no version satisfies, or
// whose agent is unknown, fails setup with agent-not-found naming the ref,
// before any model call; refs without the bindings to resolve them are
// invalid-bindings.
func TestUnresolvableAgentRef(t *testing.T) {
	for _, c := range []struct {
		name     string
		refs     []agent.AgentRef
		registry bool
		code     string
		id, rng  string
	}{
		{"no version in range", []agent.AgentRef{{ID: "acme.research", Version: "^3.0.0"}}, true, agents.CodeAgentNotFound, "acme.research", "^3.0.0"},
		{"unknown agent", []agent.AgentRef{{ID: "acme.nobody", Version: "^1.0.0"}}, true, agents.CodeAgentNotFound, "acme.nobody", "^1.0.0"},
		{"no bindings", []agent.AgentRef{{ID: "acme.research", Version: "^1.0.0"}}, false, agents.CodeInvalidBindings, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, []scripted.Response{scripted.Say("unused")}, func(s *agent.Spec) { s.SubAgents = c.refs })
			b := f.bindings()
			if c.registry {
				reg := agentRegistry(t, researchAgent(t, "1.0.0", ""))
				b.Agents, b.AgentVersions = reg.Lookup, reg.Versions
			}
			_, err := turn.Invoke(t.Context(), f.input("Draft."), b)
			if got := agents.CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %s", got, err, c.code)
			}
			if c.id != "" {
				var nf *agents.AgentNotFoundError
				if !errors.As(err, &nf) || nf.ID != c.id || nf.Version != c.rng {
					t.Errorf("error %#v, want the ref %s@%s", err, c.id, c.rng)
				}
			}
			if f.provider.Calls() != 0 {
				t.Errorf("%d model calls, want none", f.provider.Calls())
			}
		})
	}
}

// TestNoAgentRefsJournalsNoAgentFields: an agent without sub-agents or
// handoffs journals a setup step with neither field.
func TestNoAgentRefsJournalsNoAgentFields(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), nil)
	res := f.mustInvoke(t, f.bindings(), "Draft.")
	out := string(f.journal(res.RunID)[0].Output)
	if strings.Contains(out, "subAgents") || strings.Contains(out, "handoffs") {
		t.Errorf("setup journals agent fields: %s", out)
	}
}
