package agent_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
)

// loadSame loads the agent files yamlPath and jsonPath, checks they define
// the same agent, and returns it.
func loadSame(t *testing.T, yamlPath, jsonPath string) agent.Agent {
	t.Helper()
	fromYAML, err := agent.Load(yamlPath)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := agent.Load(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fromJSON, fromYAML); diff != "" {
		t.Errorf("JSON and YAML define different agents (-json +yaml):\n%s", diff)
	}
	return fromYAML
}

func TestLoadExampleYAMLMatchesJSON(t *testing.T) {
	fromYAML := loadSame(t, filepath.Join("..", "examples", "agents", "contract-drafter.yaml"), filepath.Join("testdata", "load-example.json"))
	if fromYAML.ID != "acme.contract-drafter" || fromYAML.Budget.Steps() != 6 || len(fromYAML.Tools) != 2 {
		t.Fatalf("agent = %+v", fromYAML)
	}
	if g := fromYAML.ConversationPolicy.Hitl.Tools.Overrides["acme.send-email"]; g.Mode != agent.GateAlwaysAsk {
		t.Errorf("gate = %+v", g)
	}
}

// TestParseIssuePaths: Parse reports every issue with its path: unknown
// fields (inside references too), values of the wrong type, and Define's
// rules.
func TestParseIssuePaths(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{
			name: "unknown fields, type errors and rules",
			src: `
id: acme.x
version: 1.0
name: X
instrutions: hi
capabilities: [{needs: [{feature: tool-use, level: 2}]}]
tools: [{id: acme.t, version: "^1.0.0"}]
retrieval: []
guardrails: []
`,
			want: []string{"capabilities[0].needs[0].level", "instrutions", "version", "instructions"},
		},
		{
			name: "agent references",
			src: `
id: acme.x
version: 1.0.0
name: X
instructions: hi
capabilities: [{needs: [{feature: tool-use}]}]
tools: [{id: acme.t, version: "^1.0.0"}]
subAgents:
  - {id: acme.r, version: "^1", model: gpt}
  - {id: acme.r, version: "^2"}
handoffs:
  - {id: acme.b, version: "^1", name: acme.t}
`,
			want: []string{"subAgents[0].model", "subAgents[1].id", "handoffs[0].name"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := agent.Parse([]byte(tc.src))
			issues := issuesOf(t, err)
			if diff := cmp.Diff(tc.want, paths(issues)); diff != "" {
				t.Errorf("paths (-want +got):\n%s\nissues: %v", diff, issues)
			}
		})
	}
}

func TestParseRejectsNonObjects(t *testing.T) {
	for _, src := range []string{"", "- a\n- b\n", "42", "{not json"} {
		if _, err := agent.Parse([]byte(src)); agents.CodeOf(err) != agents.CodeInvalidAgent {
			t.Errorf("Parse(%q) = %v, want invalid-agent", src, err)
		}
	}
}

func TestLoadMissingFileIsCoded(t *testing.T) {
	_, err := agent.Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if agents.CodeOf(err) != agents.CodePersistence || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v (code %q)", err, agents.CodeOf(err))
	}
}

func TestNullGateIsAnIssueNotADecodeError(t *testing.T) {
	src := []byte(`{"id":"a","version":"1.0.0","name":"A","instructions":"hi",
"capabilities":[{"needs":[{"feature":"tool-use"}]}],"tools":[{"id":"t","version":"^1.0.0"}],
"retrieval":[],"guardrails":[],
"conversationPolicy":{"hitl":{"tools":{"overrides":{"t":null}}}}}`)
	_, err := agent.Parse(src)
	var inv *agents.InvalidAgentError
	if !errors.As(err, &inv) || len(inv.Issues) != 1 || inv.Issues[0].Path != "conversationPolicy.hitl.tools.overrides.t" {
		t.Errorf("err = %v", err)
	}
}

func TestYAMLIssuesDoNotSpeakOfJSON(t *testing.T) {
	for name, src := range map[string]string{
		"syntax": "id: a\n  version: [1.0.0\n",
		"type":   "id: a\nversion: 1.0.0\nname: [1, 2]\ninstructions: hi\ncapabilities: []\ntools: []\nretrieval: []\nguardrails: []\n",
		"array":  "id: a\nversion: 1.0.0\nname: A\ninstructions: hi\ncapabilities: []\ntools: {}\nretrieval: []\nguardrails: []\n",
	} {
		_, err := agent.Parse([]byte(src))
		var inv *agents.InvalidAgentError
		if !errors.As(err, &inv) || len(inv.Issues) == 0 {
			t.Fatalf("%s: err = %v, want invalid-agent issues", name, err)
		}
		for _, is := range inv.Issues {
			if strings.Contains(is.Message, "JSON") {
				t.Errorf("%s: YAML issue %q speaks of JSON", name, is.Message)
			}
		}
		if name == "syntax" && !strings.HasPrefix(inv.Issues[0].Message, "not valid YAML: ") {
			t.Errorf("syntax: %q does not say the YAML is not valid", inv.Issues[0].Message)
		}
	}
	// JSON files keep naming JSON.
	_, err := agent.Parse([]byte(`{"id":"a","version":"1.0.0","name":[1]}`))
	if err == nil || !strings.Contains(err.Error(), "not a JSON array") {
		t.Errorf("JSON type issue = %v, want it to say \"not a JSON array\"", err)
	}
}

// TestLoadSubAgentsAndHandoffs: agent files carry subAgents and handoffs,
// in YAML and JSON alike.
func TestLoadSubAgentsAndHandoffs(t *testing.T) {
	fromYAML := loadSame(t, filepath.Join("testdata", "triage.yaml"), filepath.Join("testdata", "triage.json"))
	wantSubs := []agent.AgentRef{
		{ID: "acme.researcher", Version: "^1.0.0", Name: "research", Description: "Finds facts in the knowledge base and cites them."},
		{ID: "acme.summarizer", Version: "~2.1.0"},
	}
	wantHandoffs := []agent.AgentRef{
		{ID: "acme.billing", Version: ">=1.0.0 <2.0.0", Name: "billing", Description: "Takes over billing and refund questions."},
	}
	if diff := cmp.Diff(wantSubs, fromYAML.SubAgents); diff != "" {
		t.Errorf("SubAgents (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantHandoffs, fromYAML.Handoffs); diff != "" {
		t.Errorf("Handoffs (-want +got):\n%s", diff)
	}
}
