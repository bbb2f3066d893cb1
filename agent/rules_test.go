package agent_test

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kindgi/agents/agent"
)

// ruleTest edits the example spec and names the issue paths Define must
// report (none: the edited spec is valid). msg, when set, must appear in
// the first issue's message.
type ruleTest struct {
	name string
	edit func(*agent.Spec)
	want []string
	msg  string
}

func runRuleTests(t *testing.T, tests []ruleTest) {
	t.Helper()
	runRuleTestsOn(t, exampleSpec, tests)
}

// runRuleTestsOn runs tests with each edit made to a fresh base(t) of the
// subtest.
func runRuleTestsOn(t *testing.T, base func(testing.TB) agent.Spec, tests []ruleTest) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base(t)
			tt.edit(&s)
			_, err := agent.Define(s)
			issues := issuesOf(t, err)
			if diff := cmp.Diff(tt.want, paths(issues)); diff != "" {
				t.Fatalf("issue paths mismatch (-want +got):\n%s\nerror: %v", diff, err)
			}
			if tt.msg != "" && !strings.Contains(issues[0].Message, tt.msg) {
				t.Errorf("message %q does not contain %q", issues[0].Message, tt.msg)
			}
		})
	}
}

func TestDefineIdentityRules(t *testing.T) {
	runRuleTests(t, []ruleTest{
		{"id/short", func(s *agent.Spec) { s.ID = "a" }, nil, ""},
		{"id/all-characters", func(s *agent.Spec) { s.ID = "0acme_x.y-z9" }, nil, ""},
		{"id/128", func(s *agent.Spec) { s.ID = strings.Repeat("a", 128) }, nil, ""},
		{"id/empty", func(s *agent.Spec) { s.ID = "" }, []string{"id"}, "required"},
		{"id/129", func(s *agent.Spec) { s.ID = strings.Repeat("a", 129) }, []string{"id"}, "at most 128"},
		{"id/uppercase", func(s *agent.Spec) { s.ID = "Acme.drafter" }, []string{"id"}, "lowercase"},
		{"id/leading-dot", func(s *agent.Spec) { s.ID = ".acme" }, []string{"id"}, "starting with a letter or digit"},
		{"id/leading-dash", func(s *agent.Spec) { s.ID = "-acme" }, []string{"id"}, ""},
		{"id/space", func(s *agent.Spec) { s.ID = "acme drafter" }, []string{"id"}, ""},
		{"id/slash", func(s *agent.Spec) { s.ID = "acme/drafter" }, []string{"id"}, ""},
		{"id/non-ascii", func(s *agent.Spec) { s.ID = "acmé" }, []string{"id"}, ""},

		{"version/prerelease", func(s *agent.Spec) { s.Version = "2.1.0-beta.1" }, nil, ""},
		{"version/empty", func(s *agent.Spec) { s.Version = "" }, []string{"version"}, "required"},
		{"version/v-prefix", func(s *agent.Spec) { s.Version = "v1.0.0" }, []string{"version"}, "exact semantic version"},

		{"name/set", func(s *agent.Spec) { s.Name = "X" }, nil, ""},
		{"name/empty", func(s *agent.Spec) { s.Name = "" }, []string{"name"}, "required"},
		{"name/blank", func(s *agent.Spec) { s.Name = " \t" }, []string{"name"}, "required"},
		{"name/bad-utf8", func(s *agent.Spec) { s.Name = "Drafter \xff" }, []string{"name"}, "UTF-8"},

		{"description/set", func(s *agent.Spec) { s.Description = "Drafts clauses." }, nil, ""},
		{"description/bad-utf8", func(s *agent.Spec) { s.Description = "\xc3" }, []string{"description"}, "UTF-8"},

		{"preferredProvider/set", func(s *agent.Spec) { s.PreferredProvider = "openai" }, nil, ""},
		{"preferredProvider/bad-utf8", func(s *agent.Spec) { s.PreferredProvider = "\xff" }, []string{"preferredProvider"}, "UTF-8"},

		{"instructions/plain", func(s *agent.Spec) { s.Instructions = "Be brief." }, nil, ""},
		{"instructions/tags", func(s *agent.Spec) {
			s.Instructions = "{% if firmName %}For {{ firmName | upcase }}{% endif %}{% for i in (1..3) %}{{ i }}{% endfor %}"
		}, nil, ""},
		{"instructions/empty", func(s *agent.Spec) { s.Instructions = "" }, []string{"instructions"}, "required"},
		{"instructions/blank", func(s *agent.Spec) { s.Instructions = "\n\n" }, []string{"instructions"}, "required"},
		{"instructions/unclosed-output", func(s *agent.Spec) { s.Instructions = "Hello {{ firmName" }, []string{"instructions"}, "Liquid"},
		{"instructions/unclosed-tag", func(s *agent.Spec) { s.Instructions = "Hello {% if firmName" }, []string{"instructions"}, "Liquid"},
		{"instructions/unclosed-block", func(s *agent.Spec) { s.Instructions = "{% if firmName %}x" }, []string{"instructions"}, "Liquid"},
		{"instructions/unknown-tag", func(s *agent.Spec) { s.Instructions = "{% frobnicate %}" }, []string{"instructions"}, "Liquid"},
		{"instructions/bad-utf8", func(s *agent.Spec) { s.Instructions = "\xff" }, []string{"instructions"}, "UTF-8"},
	})
}

func TestDefineParameterRules(t *testing.T) {
	param := func(p agent.PromptParameter) func(*agent.Spec) {
		return func(s *agent.Spec) { s.Parameters = append(s.Parameters, p) }
	}
	def := func(typ string, v any) func(*agent.Spec) {
		return param(agent.PromptParameter{Name: "extra", Type: typ, Default: v})
	}
	const p1 = "parameters[1]"
	runRuleTests(t, []ruleTest{
		{"none", func(s *agent.Spec) { s.Parameters = nil }, nil, ""},
		{"name/underscore-digits", param(agent.PromptParameter{Name: "_a1", Type: "string"}), nil, ""},
		{"name/empty", param(agent.PromptParameter{Type: "string"}), []string{p1 + ".name"}, "required"},
		{"name/leading-digit", param(agent.PromptParameter{Name: "1st", Type: "string"}), []string{p1 + ".name"}, "not an identifier"},
		{"name/dash", param(agent.PromptParameter{Name: "firm-name", Type: "string"}), []string{p1 + ".name"}, "not an identifier"},
		{"name/today", param(agent.PromptParameter{Name: "today", Type: "string"}), []string{p1 + ".name"}, "reserved"},
		{"name/now", param(agent.PromptParameter{Name: "now", Type: "string"}), []string{p1 + ".name"}, "reserved"},
		{"name/agent", param(agent.PromptParameter{Name: "agent", Type: "object"}), []string{p1 + ".name"}, "reserved"},
		{"name/conversation", param(agent.PromptParameter{Name: "conversation", Type: "object"}), []string{p1 + ".name"}, "reserved"},
		{"name/Today-is-not-reserved", param(agent.PromptParameter{Name: "Today", Type: "string"}), nil, ""},
		{"name/duplicate", param(agent.PromptParameter{Name: "firmName", Type: "string"}), []string{p1 + ".name"}, "first at parameters[0]"},
		{"type/empty", param(agent.PromptParameter{Name: "x"}), []string{p1 + ".type"}, "required"},
		{"type/unknown", param(agent.PromptParameter{Name: "x", Type: "str"}), []string{p1 + ".type"}, "string, number, integer, boolean, object, array"},
		{"type/unknown-skips-default", param(agent.PromptParameter{Name: "x", Type: "date", Default: 1.0}), []string{p1 + ".type"}, ""},
		{"description/bad-utf8", param(agent.PromptParameter{Name: "x", Type: "string", Description: "\xff"}), []string{p1 + ".description"}, "UTF-8"},
		{"optional", param(agent.PromptParameter{Name: "x", Type: "string", Optional: true}), nil, ""},

		{"default/string", def("string", "Acme"), nil, ""},
		{"default/string-empty", def("string", ""), nil, ""},
		{"default/string-got-number", def("string", 1.0), []string{p1 + ".default"}, "is a number, but the parameter's type is string"},
		{"default/number", def("number", 1.5), nil, ""},
		{"default/number-int", def("number", 2), nil, ""},
		{"default/number-json", def("number", json.Number("-1.5e3")), nil, ""},
		{"default/number-got-string", def("number", "1"), []string{p1 + ".default"}, "is a string"},
		{"default/number-nan", def("number", math.NaN()), []string{p1 + ".default"}, "not a JSON value"},
		{"default/number-inf", def("number", math.Inf(1)), []string{p1 + ".default"}, "not a JSON value"},
		{"default/number-bad-json", def("number", json.Number("NaN")), []string{p1 + ".default"}, "not a JSON value"},
		{"default/number-overflow", def("number", json.Number("1e400")), []string{p1 + ".default"}, "not a JSON value"},
		{"default/integer", def("integer", 3.0), nil, ""},
		{"default/integer-go-int", def("integer", -7), nil, ""},
		{"default/integer-json", def("integer", json.Number("42")), nil, ""},
		{"default/integer-fraction", def("integer", 1.5), []string{p1 + ".default"}, "whole number"},
		{"default/integer-json-fraction", def("integer", json.Number("0.1")), []string{p1 + ".default"}, "whole number"},
		{"default/integer-got-string", def("integer", "3"), []string{p1 + ".default"}, "is a string"},
		{"default/boolean", def("boolean", false), nil, ""},
		{"default/boolean-got-string", def("boolean", "true"), []string{p1 + ".default"}, "is a string"},
		{"default/object", def("object", map[string]any{"a": []any{1.0}}), nil, ""},
		{"default/object-empty", def("object", map[string]any{}), nil, ""},
		{"default/object-got-array", def("object", []any{}), []string{p1 + ".default"}, "is an array"},
		{"default/array", def("array", []any{"a", 1.0, nil}), nil, ""},
		{"default/array-go-slice", def("array", []string{"a"}), nil, ""},
		{"default/array-got-object", def("array", map[string]any{}), []string{p1 + ".default"}, "is an object"},
		{"default/unmarshalable", def("object", map[string]any{"f": func() {}}), []string{p1 + ".default"}, "not a JSON value"},
		{"default/bad-utf8", def("string", "\xff"), []string{p1 + ".default"}, "UTF-8"},
		{"default/bad-utf8-key", def("object", map[string]any{"\xff": 1.0}), []string{p1 + ".default"}, "UTF-8"},
	})
}

func TestDefineCapabilityRules(t *testing.T) {
	runRuleTests(t, []ruleTest{
		{"several", func(s *agent.Spec) {
			s.Capabilities = append(s.Capabilities, agent.Capability{Needs: []agent.Need{{Feature: "vision"}, {Feature: "json-mode"}}})
		}, nil, ""},
		{"none", func(s *agent.Spec) { s.Capabilities = nil }, []string{"capabilities"}, "at least one capability"},
		{"empty", func(s *agent.Spec) { s.Capabilities = []agent.Capability{} }, []string{"capabilities"}, ""},
		{"no-needs", func(s *agent.Spec) { s.Capabilities[0].Needs = nil }, []string{"capabilities[0].needs"}, "at least one feature"},
		{"empty-feature", func(s *agent.Spec) {
			s.Capabilities[0].Needs = append(s.Capabilities[0].Needs, agent.Need{Feature: " "})
		}, []string{"capabilities[0].needs[1].feature"}, "name a model feature"},
		{"bad-utf8-feature", func(s *agent.Spec) { s.Capabilities[0].Needs[0].Feature = "\xff" }, []string{"capabilities[0].needs[0].feature"}, "UTF-8"},
	})
}

func TestDefineToolRules(t *testing.T) {
	ranges := []string{"1.2.3", "^1.2.3", "~1.2.3", ">=1.0.0 <2.0.0", "^0.2.3", "1.x", "*", "^1.0.0 || ^2.0.0", "1.2.3-beta.1", "1.0.0 - 2.0.0"}
	var tests []ruleTest
	for _, r := range ranges {
		tests = append(tests, ruleTest{"range/" + r, func(s *agent.Spec) { s.Tools[0].Version = r }, nil, ""})
	}
	tests = append(tests, []ruleTest{
		{"none", func(s *agent.Spec) { s.Tools = nil; s.ConversationPolicy = nil }, nil, ""},
		{"id/empty", func(s *agent.Spec) { s.Tools[0].ID = "" }, []string{"tools[0].id"}, "required"},
		{"id/syntax", func(s *agent.Spec) { s.Tools[0].ID = "Acme Search" }, []string{"tools[0].id"}, "lowercase"},
		{"id/duplicate", func(s *agent.Spec) {
			s.Tools = append(s.Tools, agent.ToolRef{ID: "acme.clause-search", Version: "^2.0.0"})
		}, []string{"tools[2].id"}, "first at tools[0]"},
		{"version/bare-id", func(s *agent.Spec) { s.Tools[1].Version = "" }, []string{"tools[1].version"}, "pin a range such as ^1.0.0"},
		{"version/blank", func(s *agent.Spec) { s.Tools[1].Version = "  " }, []string{"tools[1].version"}, "^1.0.0"},
		{"version/garbage", func(s *agent.Spec) { s.Tools[1].Version = "latest" }, []string{"tools[1].version"}, "npm-style range"},
		{"version/double-caret", func(s *agent.Spec) { s.Tools[1].Version = "^^1.0.0" }, []string{"tools[1].version"}, "npm-style range"},
		{"both-wrong", func(s *agent.Spec) { s.Tools[0] = agent.ToolRef{ID: "X"} }, []string{"tools[0].id", "tools[0].version"}, ""},
	}...)
	runRuleTests(t, tests)
}

func TestDefineRetrievalRules(t *testing.T) {
	runRuleTests(t, []ruleTest{
		{"none", func(s *agent.Spec) { s.Retrieval = nil }, nil, ""},
		{"types/several", func(s *agent.Spec) { s.Retrieval[0].Types = []string{"a", "b"} }, nil, ""},
		{"types/none", func(s *agent.Spec) { s.Retrieval[0].Types = nil }, []string{"retrieval[0].types"}, "at least one"},
		{"types/empty-entry", func(s *agent.Spec) { s.Retrieval[0].Types = []string{"a", ""} }, []string{"retrieval[0].types[1]"}, "must not be empty"},
		{"types/bad-utf8", func(s *agent.Spec) { s.Retrieval[0].Types = []string{"\xff"} }, []string{"retrieval[0].types[0]"}, "UTF-8"},
		{"scope/same-conversation", func(s *agent.Spec) { s.Retrieval[0].Scope = "same-conversation" }, nil, ""},
		{"scope/tenant", func(s *agent.Spec) { s.Retrieval[0].Scope = "tenant" }, nil, ""},
		{"scope/empty", func(s *agent.Spec) { s.Retrieval[0].Scope = "" }, []string{"retrieval[0].scope"}, "required"},
		{"scope/unknown", func(s *agent.Spec) { s.Retrieval[0].Scope = "global" }, []string{"retrieval[0].scope"}, "same-conversation, same-project, tenant"},
		{"limit/omitted", func(s *agent.Spec) { s.Retrieval[0].Limit = nil }, nil, ""},
		{"limit/1", func(s *agent.Spec) { s.Retrieval[0].Limit = ptr(1) }, nil, ""},
		{"limit/1000", func(s *agent.Spec) { s.Retrieval[0].Limit = ptr(1000) }, nil, ""},
		{"limit/0", func(s *agent.Spec) { s.Retrieval[0].Limit = ptr(0) }, []string{"retrieval[0].limit"}, "1 to 1000"},
		{"limit/1001", func(s *agent.Spec) { s.Retrieval[0].Limit = ptr(1001) }, []string{"retrieval[0].limit"}, "1 to 1000"},
		{"limit/negative", func(s *agent.Spec) { s.Retrieval[0].Limit = ptr(-5) }, []string{"retrieval[0].limit"}, ""},
		{"mode/omitted", func(s *agent.Spec) { s.Retrieval[0].Mode = "" }, nil, ""},
		{"mode/semantic", func(s *agent.Spec) { s.Retrieval[0].Mode = "semantic" }, nil, ""},
		{"mode/both", func(s *agent.Spec) { s.Retrieval[0].Mode = "both" }, nil, ""},
		{"mode/unknown", func(s *agent.Spec) { s.Retrieval[0].Mode = "fuzzy" }, []string{"retrieval[0].mode"}, "keyword, semantic, both"},
		{"second-intent", func(s *agent.Spec) {
			s.Retrieval = append(s.Retrieval, agent.RetrievalIntent{Scope: "x"})
		}, []string{"retrieval[1].types", "retrieval[1].scope"}, ""},
	})
}

func TestDefineListRules(t *testing.T) {
	runRuleTests(t, []ruleTest{
		{"guardrails/none", func(s *agent.Spec) { s.Guardrails = nil }, nil, ""},
		{"guardrails/several", func(s *agent.Spec) { s.Guardrails = []string{"a", "b"} }, nil, ""},
		{"guardrails/empty", func(s *agent.Spec) { s.Guardrails = []string{"a", ""} }, []string{"guardrails[1]"}, "must not be empty"},
		{"guardrails/duplicate", func(s *agent.Spec) { s.Guardrails = []string{"a", "b", "a"} }, []string{"guardrails[2]"}, "first at guardrails[0]"},
		{"guardrails/bad-utf8", func(s *agent.Spec) { s.Guardrails = []string{"\xff"} }, []string{"guardrails[0]"}, "UTF-8"},
		{"tags/several", func(s *agent.Spec) { s.Tags = []string{"legal", "beta"} }, nil, ""},
		{"tags/empty", func(s *agent.Spec) { s.Tags = []string{" "} }, []string{"tags[0]"}, "must not be empty"},
		{"tags/duplicate", func(s *agent.Spec) { s.Tags = []string{"x", "x"} }, []string{"tags[1]"}, "listed twice"},
	})
}

func TestDefineConversationPolicyRules(t *testing.T) {
	const hitl = "conversationPolicy.hitl"
	gates := func(s *agent.Spec) *agent.ToolGates { return s.ConversationPolicy.Hitl.Tools }
	runRuleTests(t, []ruleTest{
		{"none", func(s *agent.Spec) { s.ConversationPolicy = nil }, nil, ""},
		{"empty", func(s *agent.Spec) { s.ConversationPolicy = &agent.ConversationPolicy{} }, nil, ""},
		{"historyLimit/0", func(s *agent.Spec) { s.ConversationPolicy.HistoryLimit = ptr(0) }, nil, ""},
		{"historyLimit/negative", func(s *agent.Spec) { s.ConversationPolicy.HistoryLimit = ptr(-1) }, []string{"conversationPolicy.historyLimit"}, "negative"},
		{"autoClose/1", func(s *agent.Spec) { s.ConversationPolicy.AutoCloseAfterInactiveSeconds = ptr(1) }, nil, ""},
		{"autoClose/0", func(s *agent.Spec) { s.ConversationPolicy.AutoCloseAfterInactiveSeconds = ptr(0) }, []string{"conversationPolicy.autoCloseAfterInactiveSeconds"}, "greater than 0"},
		{"hitlAfterTurns/2", func(s *agent.Spec) { s.ConversationPolicy.HitlAfterTurns = ptr(2) }, nil, ""},
		{"hitlAfterTurns/0", func(s *agent.Spec) { s.ConversationPolicy.HitlAfterTurns = ptr(0) }, []string{"conversationPolicy.hitlAfterTurns"}, "greater than 0"},
		{"hitl/empty", func(s *agent.Spec) { s.ConversationPolicy.Hitl = &agent.HitlPolicy{} }, nil, ""},
		{"afterTurns/1", func(s *agent.Spec) { s.ConversationPolicy.Hitl.AfterTurns = ptr(1) }, nil, ""},
		{"afterTurns/negative", func(s *agent.Spec) { s.ConversationPolicy.Hitl.AfterTurns = ptr(-3) }, []string{hitl + ".afterTurns"}, "greater than 0"},
		{"timeoutMs/1", func(s *agent.Spec) { s.ConversationPolicy.Hitl.TimeoutMs = ptr[int64](1) }, nil, ""},
		{"timeoutMs/0", func(s *agent.Spec) { s.ConversationPolicy.Hitl.TimeoutMs = ptr[int64](0) }, []string{hitl + ".timeoutMs"}, "greater than 0"},
		{"reviewerRole", func(s *agent.Spec) { s.ConversationPolicy.Hitl.DefaultReviewerRole = "lead" }, nil, ""},
		{"default/each-mode", func(s *agent.Spec) {
			gates(s).Default = &agent.ToolGate{Mode: agent.GateNeverAsk}
			gates(s).Overrides["acme.send-email"] = agent.ToolGate{Mode: agent.GateAskOnFirstUse, RequiredRole: "admin"}
			gates(s).Overrides["acme.clause-search"] = agent.ToolGate{Mode: agent.GateAlwaysAsk}
		}, nil, ""},
		{"default/unknown-mode", func(s *agent.Spec) { gates(s).Default = &agent.ToolGate{Mode: "sometimes"} }, []string{hitl + ".tools.default"}, "never_ask, ask_on_first_use, always_ask"},
		{"default/empty-mode", func(s *agent.Spec) { gates(s).Default = &agent.ToolGate{RequiredRole: "x"} }, []string{hitl + ".tools.default"}, "required"},
		{"override/unknown-mode", func(s *agent.Spec) {
			gates(s).Overrides["acme.send-email"] = agent.ToolGate{Mode: "ALWAYS_ASK"}
		}, []string{hitl + ".tools.overrides.acme.send-email"}, "never_ask"},
		{"override/unreferenced-tool", func(s *agent.Spec) {
			gates(s).Overrides["acme.fax"] = agent.ToolGate{Mode: agent.GateAlwaysAsk}
		}, []string{hitl + ".tools.overrides.acme.fax"}, "does not reference"},
		{"override/tool-removed", func(s *agent.Spec) { s.Tools = s.Tools[:1] }, []string{hitl + ".tools.overrides.acme.send-email"}, "add the tool to tools"},
		{"override/many-tools", func(s *agent.Spec) {
			// Enough tools and overrides that Define looks ids up in a set.
			for i := range 20 {
				id := fmt.Sprintf("acme.t%02d", i)
				s.Tools = append(s.Tools, agent.ToolRef{ID: id, Version: "^1.0.0"})
				gates(s).Overrides[id] = agent.ToolGate{Mode: agent.GateAlwaysAsk}
			}
			gates(s).Overrides["acme.t99"] = agent.ToolGate{Mode: agent.GateAlwaysAsk}
		}, []string{hitl + ".tools.overrides.acme.t99"}, "does not reference"},
		{"override/sorted", func(s *agent.Spec) {
			gates(s).Overrides["z.tool"] = agent.ToolGate{Mode: agent.GateAlwaysAsk}
			gates(s).Overrides["b.tool"] = agent.ToolGate{Mode: "bogus"}
		}, []string{hitl + ".tools.overrides.b.tool", hitl + ".tools.overrides.b.tool", hitl + ".tools.overrides.z.tool"}, ""},
	})
}

func TestDefineBudgetRules(t *testing.T) {
	runRuleTests(t, []ruleTest{
		{"none", func(s *agent.Spec) { s.Budget = nil }, nil, ""},
		{"empty", func(s *agent.Spec) { s.Budget = &agent.TurnBudget{} }, nil, ""},
		{"maxSteps/1", func(s *agent.Spec) { s.Budget.MaxSteps = ptr(1) }, nil, ""},
		{"maxSteps/32", func(s *agent.Spec) { s.Budget.MaxSteps = ptr(32) }, nil, ""},
		{"maxSteps/0", func(s *agent.Spec) { s.Budget.MaxSteps = ptr(0) }, []string{"budget.maxSteps"}, "1 to 32"},
		{"maxSteps/33", func(s *agent.Spec) { s.Budget.MaxSteps = ptr(33) }, []string{"budget.maxSteps"}, "1 to 32"},
		{"maxCostUsd/0", func(s *agent.Spec) { s.Budget.MaxCostUsd = ptr(0.0) }, nil, ""},
		{"maxCostUsd/negative", func(s *agent.Spec) { s.Budget.MaxCostUsd = ptr(-0.01) }, []string{"budget.maxCostUsd"}, "0 or more"},
		{"maxCostUsd/nan", func(s *agent.Spec) { s.Budget.MaxCostUsd = ptr(math.NaN()) }, []string{"budget.maxCostUsd"}, "finite"},
		{"maxCostUsd/inf", func(s *agent.Spec) { s.Budget.MaxCostUsd = ptr(math.Inf(1)) }, []string{"budget.maxCostUsd"}, "finite"},
		{"maxWallMs/1", func(s *agent.Spec) { s.Budget.MaxWallMs = ptr[int64](1) }, nil, ""},
		{"maxWallMs/0", func(s *agent.Spec) { s.Budget.MaxWallMs = ptr[int64](0) }, []string{"budget.maxWallMs"}, "greater than 0"},
		{"maxWallMs/negative", func(s *agent.Spec) { s.Budget.MaxWallMs = ptr[int64](-1) }, []string{"budget.maxWallMs"}, "greater than 0"},
	})
}
