package agent_test

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
)

func ptr[T any](v T) *T { return &v }

// exampleFile is the acme.contract-drafter agent of the TypeScript
// package's example, as an agent file.
const exampleFile = "testdata/contract-drafter.json"

// exampleSpec returns exampleFile read the way an agent file is read by
// hand (json.Unmarshal into a Spec), freshly decoded on every call so
// tests can mutate it.
func exampleSpec(t testing.TB) agent.Spec {
	t.Helper()
	data, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	var s agent.Spec
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("%s: %v", exampleFile, err)
	}
	return s
}

// minimalSpec has only the required fields.
func minimalSpec() agent.Spec {
	return agent.Spec{
		ID:           "acme.min",
		Version:      "0.1.0",
		Name:         "Min",
		Instructions: "Be brief.",
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "chat"}}}},
	}
}

func mustDefine(t testing.TB, s agent.Spec) agent.Agent {
	t.Helper()
	a, err := agent.Define(s)
	if err != nil {
		t.Fatalf("Define: %v", err)
	}
	return a
}

// issuesOf returns the issues of a Define error, failing the test when
// the error is not an *agents.InvalidAgentError with code invalid-agent.
func issuesOf(t *testing.T, err error) []agents.Issue {
	t.Helper()
	if err == nil {
		return nil
	}
	var inv *agents.InvalidAgentError
	if !errors.As(err, &inv) {
		t.Fatalf("error %T %v is not *agents.InvalidAgentError", err, err)
	}
	if got := agents.CodeOf(err); got != agents.CodeInvalidAgent {
		t.Fatalf("CodeOf = %q, want %q", got, agents.CodeInvalidAgent)
	}
	for _, is := range inv.Issues {
		if is.Message == "" {
			t.Errorf("issue at %q has no message", is.Path)
		}
	}
	return inv.Issues
}

func paths(issues []agents.Issue) []string {
	var ps []string
	for _, is := range issues {
		ps = append(ps, is.Path)
	}
	return ps
}

// TestDefineSpecExample: the example agent file, decoded into a Spec and
// defined, is this agent, with Define's defaults applied.
func TestDefineSpecExample(t *testing.T) {
	got := mustDefine(t, exampleSpec(t))
	want := agent.Agent{
		ID:           "acme.contract-drafter",
		Version:      "1.0.0",
		Name:         "Contract Drafter",
		Instructions: "You draft contract clauses for {{ firmName }}. Today is {{ today }}.",
		Parameters:   []agent.PromptParameter{{Name: "firmName", Type: "string"}},
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		Tools: []agent.ToolRef{
			{ID: "acme.clause-search", Version: "^1.0.0"},
			{ID: "acme.send-email", Version: "~2.1.0"},
		},
		Retrieval:  []agent.RetrievalIntent{{Types: []string{"acme.clause"}, Scope: "same-project", Mode: "keyword", Limit: ptr(5)}},
		Guardrails: []string{"acme.no-pii"},
		ConversationPolicy: &agent.ConversationPolicy{
			HistoryLimit: ptr(20),
			Hitl: &agent.HitlPolicy{Tools: &agent.ToolGates{
				Overrides: map[string]agent.ToolGate{"acme.send-email": {Mode: "always_ask"}},
			}},
		},
		Budget: &agent.TurnBudget{MaxSteps: ptr(6), MaxCostUsd: ptr(0.25), MaxWallMs: ptr[int64](60000)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Define(example) mismatch (-want +got):\n%s", diff)
	}
}

// TestDefineAgentFile: Load, which reads an agent file strictly
// (unknown fields are issues), defines the same agent from the example
// file as json.Unmarshal into a Spec and Define do.
func TestDefineAgentFile(t *testing.T) {
	got, err := agent.Load(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	want := mustDefine(t, exampleSpec(t))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("agent file mismatch (-want +got):\n%s", diff)
	}
}

func TestDefineDefaults(t *testing.T) {
	s := minimalSpec()
	s.Retrieval = []agent.RetrievalIntent{{Types: []string{"note"}, Scope: agent.ScopeTenant}}
	s.Budget = &agent.TurnBudget{MaxCostUsd: ptr(0.0)}
	got := mustDefine(t, s)
	want := agent.Agent{
		ID:           "acme.min",
		Version:      "0.1.0",
		Name:         "Min",
		Instructions: "Be brief.",
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "chat"}}}},
		Tools:        []agent.ToolRef{},
		Retrieval:    []agent.RetrievalIntent{{Types: []string{"note"}, Scope: "tenant", Limit: ptr(agent.DefaultRetrievalLimit)}},
		Guardrails:   []string{},
		Budget: &agent.TurnBudget{
			MaxSteps:   ptr(agent.DefaultMaxSteps),
			MaxCostUsd: ptr(0.0),
			MaxWallMs:  ptr[int64](agent.DefaultMaxWallMs),
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults mismatch (-want +got):\n%s", diff)
	}
	// Without a budget at all, Define still sets one.
	a := mustDefine(t, minimalSpec())
	if a.Budget == nil || *a.Budget.MaxSteps != 8 || *a.Budget.MaxWallMs != 120000 || a.Budget.MaxCostUsd != nil {
		t.Errorf("Budget = %+v, want maxSteps 8, maxWallMs 120000, no cost cap", a.Budget)
	}
	// The Spec's pointers are not shared with the Agent's.
	if s.Retrieval[0].Limit != nil {
		t.Error("Define wrote the default limit into the caller's Spec")
	}
}

// TestDefineSevenIssues checks that Define collects every problem, not the
// first: seven different mistakes give exactly seven issues.
func TestDefineSevenIssues(t *testing.T) {
	s := exampleSpec(t)
	s.ID = "Acme Drafter"                                                     // 1 id syntax
	s.Version = "v1.0"                                                        // 2 not exact semver
	s.Parameters = append(s.Parameters, agent.PromptParameter{Name: "today"}) // 3 reserved (type set below)
	s.Parameters[1].Type = agent.TypeString
	s.Tools[1].Version = ""                                                                              // 4 bare tool id
	s.Retrieval[0].Limit = ptr(0)                                                                        // 5 limit out of range
	s.ConversationPolicy.Hitl.Tools.Overrides["acme.unknown"] = agent.ToolGate{Mode: agent.GateNeverAsk} // 6 override of unreferenced tool
	s.Budget.MaxSteps = ptr(33)                                                                          // 7 too many steps

	_, err := agent.Define(s)
	got := paths(issuesOf(t, err))
	want := []string{
		"id",
		"version",
		"parameters[1].name",
		"tools[1].version",
		"retrieval[0].limit",
		"conversationPolicy.hitl.tools.overrides.acme.unknown",
		"budget.maxSteps",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("issue paths mismatch (-want +got):\n%s\nerror: %v", diff, err)
	}
}

// TestDefineDeepCopy checks that the Agent shares no memory with the Spec.
func TestDefineDeepCopy(t *testing.T) {
	s := exampleSpec(t)
	s.Parameters[0].Default = map[string]any{"k": []any{"v"}}
	s.Parameters[0].Type = agent.TypeObject
	s.Tags = []string{"legal"}
	s.ConversationPolicy.Hitl.Tools.Default = &agent.ToolGate{Mode: agent.GateAskOnFirstUse}
	s.ConversationPolicy.Hitl.TimeoutMs = ptr[int64](1000)
	a := mustDefine(t, s)
	want := mustDefine(t, s)

	s.ID = "changed"
	s.Parameters[0].Name = "changed"
	s.Parameters[0].Default.(map[string]any)["k"].([]any)[0] = "changed"
	s.Capabilities[0].Needs[0].Feature = "changed"
	s.Tools[0].Version = "changed"
	s.Retrieval[0].Types[0] = "changed"
	*s.Retrieval[0].Limit = 99
	s.Guardrails[0] = "changed"
	s.Tags[0] = "changed"
	*s.ConversationPolicy.HistoryLimit = 99
	*s.ConversationPolicy.Hitl.TimeoutMs = 99
	s.ConversationPolicy.Hitl.Tools.Default.Mode = agent.GateNeverAsk
	s.ConversationPolicy.Hitl.Tools.Overrides["acme.send-email"] = agent.ToolGate{Mode: agent.GateNeverAsk}
	s.ConversationPolicy.Hitl.Tools.Overrides["acme.clause-search"] = agent.ToolGate{Mode: agent.GateNeverAsk}
	*s.Budget.MaxSteps = 1
	*s.Budget.MaxCostUsd = 9
	*s.Budget.MaxWallMs = 1

	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("changing the Spec changed the Agent (-want +got):\n%s", diff)
	}
}

// roundTrip marshals a, unmarshals the JSON into a Spec and defines it.
func roundTrip(t testing.TB, a agent.Agent) agent.Agent {
	t.Helper()
	data, err := json.Marshal(a)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	var s agent.Spec
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("Unmarshal %s: %v", data, err)
	}
	b, err := agent.Define(s)
	if err != nil {
		t.Fatalf("Define of marshalled agent %s: %v", data, err)
	}
	return b
}

func TestDefineRoundTrip(t *testing.T) {
	full := exampleSpec(t)
	full.Description = "Drafts <clauses> & more"
	full.Parameters = append(full.Parameters,
		agent.PromptParameter{Name: "count", Type: agent.TypeInteger, Default: 3, Description: "how many"},
		agent.PromptParameter{Name: "ratio", Type: agent.TypeNumber, Default: json.Number("0.5")},
		agent.PromptParameter{Name: "flags", Type: agent.TypeArray, Default: []string{"a", "b"}},
		agent.PromptParameter{Name: "opts", Type: agent.TypeObject, Default: map[string]any{"x": 1, "y": []any{true, nil}}},
		agent.PromptParameter{Name: "strict", Type: agent.TypeBoolean, Optional: true, Default: false},
		agent.PromptParameter{Name: "note", Type: agent.TypeString, Optional: true},
	)
	full.Capabilities = append(full.Capabilities, agent.Capability{Needs: []agent.Need{{Feature: "json-mode"}, {Feature: "vision"}}})
	full.Retrieval = append(full.Retrieval, agent.RetrievalIntent{Types: []string{"a", "b"}, Scope: agent.ScopeSameConversation})
	full.PreferredProvider = "openai"
	full.ConversationPolicy.AutoCloseAfterInactiveSeconds = ptr(3600)
	full.ConversationPolicy.HitlAfterTurns = ptr(5)
	full.ConversationPolicy.Hitl.AfterTurns = ptr(3)
	full.ConversationPolicy.Hitl.DefaultReviewerRole = "lead"
	full.ConversationPolicy.Hitl.TimeoutMs = ptr[int64](86400000)
	full.ConversationPolicy.Hitl.Tools.Default = &agent.ToolGate{Mode: agent.GateAskOnFirstUse}
	full.ConversationPolicy.Hitl.Tools.Overrides["acme.clause-search"] = agent.ToolGate{Mode: agent.GateNeverAsk, RequiredRole: "admin"}
	full.Tags = []string{"legal", "drafting"}

	empty := minimalSpec()
	empty.Tools = []agent.ToolRef{}
	empty.Guardrails = []string{}
	empty.Tags = []string{}
	empty.Parameters = []agent.PromptParameter{}
	empty.ConversationPolicy = &agent.ConversationPolicy{Hitl: &agent.HitlPolicy{Tools: &agent.ToolGates{Overrides: map[string]agent.ToolGate{}}}}

	for name, s := range map[string]agent.Spec{
		"example": exampleSpec(t),
		"minimal": minimalSpec(),
		"full":    full,
		"empty":   empty,
	} {
		t.Run(name, func(t *testing.T) {
			a := mustDefine(t, s)
			if diff := cmp.Diff(a, roundTrip(t, a)); diff != "" {
				t.Errorf("round trip mismatch (-defined +round-tripped):\n%s", diff)
			}
		})
	}
}

func TestDefineCanonicalDefaults(t *testing.T) {
	s := minimalSpec()
	s.Instructions = "x"
	s.Parameters = []agent.PromptParameter{
		{Name: "i", Type: agent.TypeInteger, Default: int64(7)},
		{Name: "n", Type: agent.TypeNumber, Default: json.Number("1e2")},
		{Name: "a", Type: agent.TypeArray, Default: []int{1, 2}},
		{Name: "o", Type: agent.TypeObject, Default: struct {
			A string `json:"a"`
		}{"x"}},
		{Name: "w", Type: agent.TypeInteger, Default: 2.0},
	}
	got := mustDefine(t, s).Parameters
	want := []any{7.0, 100.0, []any{1.0, 2.0}, map[string]any{"a": "x"}, 2.0}
	for i, p := range got {
		if diff := cmp.Diff(want[i], p.Default); diff != "" {
			t.Errorf("parameters[%d].default (-want +got):\n%s", i, diff)
		}
	}
}

func TestPromptParameterRequired(t *testing.T) {
	tests := []struct {
		p    agent.PromptParameter
		want bool
	}{
		{agent.PromptParameter{Name: "a", Type: "string"}, true},
		{agent.PromptParameter{Name: "b", Type: "string", Optional: true}, false},
		{agent.PromptParameter{Name: "c", Type: "string", Default: "x"}, false},
		{agent.PromptParameter{Name: "d", Type: "boolean", Default: false}, false},
	}
	for _, tt := range tests {
		if got := tt.p.Required(); got != tt.want {
			t.Errorf("%+v.Required() = %v, want %v", tt.p, got, tt.want)
		}
	}
	// After Define (and a JSON round trip) a parameter keeps its status.
	s := minimalSpec()
	s.Parameters = []agent.PromptParameter{tests[0].p, tests[1].p, tests[2].p, tests[3].p}
	a := roundTrip(t, mustDefine(t, s))
	for i, p := range a.Parameters {
		if got := p.Required(); got != tests[i].want {
			t.Errorf("defined parameters[%d].Required() = %v, want %v", i, got, tests[i].want)
		}
	}
}

func TestInvalidAgentErrorMessage(t *testing.T) {
	s := minimalSpec()
	s.ID = ""
	s.Name = " "
	_, err := agent.Define(s)
	issues := issuesOf(t, err)
	if len(issues) != 2 {
		t.Fatalf("got %d issues, want 2: %v", len(issues), err)
	}
	const want = "invalid agent: 2 issues: id: id is required"
	if got := err.Error(); len(got) < len(want) || got[:len(want)] != want {
		t.Errorf("Error() = %q, want prefix %q", got, want)
	}
}
