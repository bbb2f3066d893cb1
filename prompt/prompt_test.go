package prompt_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/prompt"
)

var fixedNow = time.Date(2026, 3, 4, 23, 30, 0, 0, time.FixedZone("EST", -5*3600))

func testAgent(instructions string, params ...agent.PromptParameter) agent.Agent {
	return agent.Agent{
		ID:           "acme.test",
		Version:      "1.0.0",
		Name:         "Test",
		Instructions: instructions,
		Parameters:   params,
	}
}

// TestRenderSpecExample renders the instructions of the repository's
// example agent file, the contract drafter.
func TestRenderSpecExample(t *testing.T) {
	a, err := agent.Load("../examples/agents/contract-drafter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := prompt.Render(a, prompt.Context{
		Parameters:     map[string]any{"firmName": "Globex"},
		Now:            fixedNow,
		ConversationID: "c-1",
		Turn:           2,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := prompt.Result{
		Text: "You draft contract clauses for Globex. Today is 2026-03-04.",
		Context: map[string]any{
			"firmName":     "Globex",
			"today":        "2026-03-04",
			"now":          "2026-03-04T23:30:00-05:00",
			"agent":        map[string]any{"id": "acme.contract-drafter", "name": "Contract Drafter", "version": "1.0.0"},
			"conversation": map[string]any{"id": "c-1", "turn": 2},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Render (-want +got):\n%s", diff)
	}
}

// renderCase renders tmpl as an agent declaring params with values bound;
// want is the text (or, for a failure, the name the error carries).
type renderCase struct {
	name   string
	tmpl   string
	params []agent.PromptParameter
	values map[string]any
	want   string
}

func TestRenderText(t *testing.T) {
	firm := agent.PromptParameter{Name: "firm", Type: "string"}
	tone := agent.PromptParameter{Name: "tone", Type: "string", Default: "formal"}
	nick := agent.PromptParameter{Name: "nick", Type: "string", Optional: true}
	items := agent.PromptParameter{Name: "items", Type: "array"}
	tests := []renderCase{
		{"parameter", "Hi {{ firm }}", []agent.PromptParameter{firm}, map[string]any{"firm": "Acme"}, "Hi Acme"},
		{"default applied", "{{ tone }}", []agent.PromptParameter{tone}, nil, "formal"},
		{"default overridden", "{{ tone }}", []agent.PromptParameter{tone}, map[string]any{"tone": "casual"}, "casual"},
		{"optional absent is nil", "[{{ nick }}]{% if nick %}x{% else %}none{% endif %}", []agent.PromptParameter{nick}, nil, "[]none"},
		{"optional with default filter", `{{ nick | default: "friend" }}`, []agent.PromptParameter{nick}, nil, "friend"},
		{"undeclared value is bound", "{{ extra }}", nil, map[string]any{"extra": 7}, "7"},
		{"auto vars", "{{ today }} {{ now }} {{ agent.id }}@{{ agent.version }} {{ agent.name }} {{ conversation.id }}#{{ conversation.turn }}", nil, nil,
			"2026-03-04 2026-03-04T23:30:00-05:00 acme.test@1.0.0 Test conv-9#3"},
		{"auto var wins over parameter", "{{ today }}", nil, map[string]any{"today": "yesterday"}, "2026-03-04"},
		{"filters", `{{ firm | upcase }} {{ firm | downcase | append: "!" }} {{ "a,b" | split: "," | join: "+" }} {{ 3 | plus: 4 }} {{ firm | size }}`,
			[]agent.PromptParameter{firm}, map[string]any{"firm": "Acme"}, "ACME acme! a+b 7 4"},
		{"for over list", "{% for i in items %}{{ forloop.index }}:{{ i }} {% endfor %}", []agent.PromptParameter{items}, map[string]any{"items": []any{"a", "b"}}, "1:a 2:b "},
		{"for else", "{% for i in items %}{{ i }}{% else %}empty{% endfor %}", []agent.PromptParameter{items}, map[string]any{"items": []any{}}, "empty"},
		{"range, offset, limit", "{% for i in (1..5) offset: 1 limit: 3 %}{{ i }}{% endfor %}", nil, nil, "234"},
		{"reversed", "{% for i in (1..3) reversed %}{{ i }}{% endfor %}", nil, nil, "321"},
		{"break and continue", "{% for i in (1..6) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}", nil, nil, "134"},
		{"assign and capture", `{% assign x = "a" | append: "b" %}{% capture c %}[{{ x }}]{% endcapture %}{{ c }}{{ c }}`, nil, nil, "[ab][ab]"},
		{"case", `{% case firm %}{% when "Acme" %}A{% else %}O{% endcase %}`, []agent.PromptParameter{firm}, map[string]any{"firm": "Acme"}, "A"},
		{"unless", `{% unless firm == "Acme" %}no{% endunless %}yes`, []agent.PromptParameter{firm}, map[string]any{"firm": "Acme"}, "yes"},
		{"whitespace control", "a  {{- firm -}}  b\n{%- if true -%}\n c{%- endif %}", []agent.PromptParameter{firm}, map[string]any{"firm": "X"}, "aXbc"},
		{"raw", "{% raw %}{{ firm }} {% if %}{% endraw %}", nil, nil, "{{ firm }} {% if %}"},
		{"comment", "a{% comment %}{{ nope }}{% endcomment %}b", nil, nil, "ab"},
		{"multi-line output", "{{ firm\n  | upcase }}", []agent.PromptParameter{firm}, map[string]any{"firm": "x"}, "X"},
		{"map property", "{{ client.name }}", nil, map[string]any{"client": map[string]any{"name": "Ann"}}, "Ann"},
		{"nil property is empty", "[{{ client.nick }}]", nil, map[string]any{"client": map[string]any{"nick": nil}}, "[]"},
		{"tablerow", "{% tablerow i in (1..2) %}{{ i }}{% endtablerow %}", nil, nil, `<tr class="row1"><td class="col1">1</td><td class="col2">2</td></tr>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := prompt.Render(testAgent(tt.tmpl, tt.params...), prompt.Context{Parameters: tt.values, Now: fixedNow, ConversationID: "conv-9", Turn: 3})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if diff := cmp.Diff(tt.want, got.Text); diff != "" {
				t.Errorf("Text (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderContextHoldsWhatTheTemplateSaw(t *testing.T) {
	a := testAgent("{{ tone }}", agent.PromptParameter{Name: "tone", Type: "string", Default: "formal"},
		agent.PromptParameter{Name: "nick", Type: "string", Optional: true})
	got, err := prompt.Render(a, prompt.Context{Parameters: map[string]any{"x": 1}, Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"tone": "formal", "nick": nil, "x": 1,
		"today": "2026-03-04", "now": "2026-03-04T23:30:00-05:00",
		"agent":        map[string]any{"id": "acme.test", "name": "Test", "version": "1.0.0"},
		"conversation": map[string]any{"id": "", "turn": 0},
	}
	if diff := cmp.Diff(want, got.Context); diff != "" {
		t.Errorf("Context (-want +got):\n%s", diff)
	}
}

func TestRenderZeroNowIsCurrentTime(t *testing.T) {
	before := time.Now()
	got, err := prompt.Render(testAgent("{{ now }}"), prompt.Context{})
	if err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse(time.RFC3339, got.Text)
	if err != nil {
		t.Fatalf("now %q is not RFC 3339: %v", got.Text, err)
	}
	if at.Before(before.Truncate(time.Second)) || at.After(time.Now().Add(time.Second)) {
		t.Errorf("now = %v, want about %v", at, before)
	}
}

func TestRenderMissingParameter(t *testing.T) {
	firm := agent.PromptParameter{Name: "firm", Type: "string"}
	tests := []renderCase{
		{"required absent", "{{ firm }}", []agent.PromptParameter{firm}, nil, "firm"},
		{"required absent, unused", "hello", []agent.PromptParameter{firm}, nil, "firm"},
		{"output", "Hi {{ who }}", nil, nil, "who"},
		{"property of unbound", "{{ who.name }}", nil, nil, "who"},
		{"missing map key", "{{ client.city }}", nil, map[string]any{"client": map[string]any{"name": "A"}}, "client.city"},
		{"missing auto property", "{{ agent.owner }}", nil, nil, "agent.owner"},
		{"if", "{% if flag %}x{% endif %}", nil, nil, "flag"},
		{"elsif", "{% if false %}x{% elsif flag2 %}y{% endif %}", nil, nil, "flag2"},
		{"unless", "{% unless flag %}x{% endunless %}", nil, nil, "flag"},
		{"case", "{% case kind %}{% when 1 %}x{% endcase %}", nil, nil, "kind"},
		{"for collection", "{% for i in things %}{{ i }}{% endfor %}", nil, nil, "things"},
		{"inside for body", "{% for i in (1..2) %}{{ i }}{{ other }}{% endfor %}", nil, nil, "other"},
		{"for limit", "{% for i in (1..2) limit: n %}{{ i }}{% endfor %}", nil, nil, "n"},
		{"filter argument", `{{ "a" | append: suffix }}`, nil, nil, "suffix"},
		{"default filter input", `{{ absent | default: "x" }}`, nil, nil, "absent"},
		{"second operand", "{% if true and flag %}x{% endif %}", nil, nil, "flag"},
		{"assign", "{% assign y = src | upcase %}", nil, nil, "src"},
		{"index", "{{ list[key] }}", nil, map[string]any{"list": []any{1}}, "key"},
		{"after assign in branch", "{% if false %}{% assign later = 1 %}{% endif %}{{ later }}", nil, nil, "later"},
		{"range bound", "{% for i in (1..top) %}{% endfor %}", nil, nil, "top"},
		{"missing key in a tag", "{% if nick.first %}x{% endif %}", nil, map[string]any{"nick": map[string]any{}}, "nick.first"},
		{"later when", `{% case 2 %}{% when 1 %}{{ "a" }}{% when other %}b{% endcase %}`, nil, nil, "other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := prompt.Render(testAgent(tt.tmpl, tt.params...), prompt.Context{Parameters: tt.values, Now: fixedNow})
			var mp *agents.MissingParameterError
			if !errors.As(err, &mp) {
				t.Fatalf("Render = %q, %v; want *MissingParameterError", got.Text, err)
			}
			if agents.CodeOf(err) != agents.CodeMissingParameter {
				t.Errorf("code = %q", agents.CodeOf(err))
			}
			if mp.Name != tt.want {
				t.Errorf("Name = %q, want %q", mp.Name, tt.want)
			}
		})
	}
}

func TestRenderFailure(t *testing.T) {
	tests := []struct {
		name string
		tmpl string
		want string // substring of the reason
	}{
		{"unclosed output", "Hi {{ firm", "not closed"},
		{"unclosed tag", "{% if x", "not closed"},
		{"unterminated block", "{% if true %}x", "unterminated"},
		{"unknown tag", "{% frob %}", "undefined tag"},
		{"include is refused", `{% include "a.liquid" %}`, "{% include %} is refused"},
		{"unknown filter", "{{ 1 | frob }}", "undefined filter"},
		{"filter in a for collection", "{% for i in arr | reverse %}{{ i }}{% endfor %}", "LiquidJS ignores it"},
		{"bad expression", "{{ 1 + }}", "Liquid"},
		{"long output", `{% for i in (1..3000) %}{{ "x" | append: chunk }}{% endfor %}`, "exceeds"},
		{"loop with output", "{% for i in (1..200000000) %}x{% endfor %}", "iterations"},
		{"empty loop", "{% for i in (1..200000000) %}{% endfor %}", "iterations"},
		{"nested loops", "{% for i in (1..10000) %}{% for j in (1..10000) %}{% endfor %}{% endfor %}", "iterations"},
		{"doubling string", `{% assign s = "xxxxxxxx" %}{% for i in (1..40) %}{% assign s = s | append: s %}{% endfor %}`, "value exceeds"},
		{"doubling capture", `{% assign s = "xxxxxxxx" %}{% for i in (1..40) %}{% capture s %}{{ s }}{{ s }}{% endcapture %}{% endfor %}`, "exceeds"},
		{"doubling list", `{% assign a = "x,y" | split: "," %}{% for i in (1..40) %}{% assign a = a | concat: a %}{% endfor %}`, "value exceeds"},
		{"huge range in filter", `{{ (1..200000000) | join: "," }}`, "value exceeds"},
		{"huge range output", `{{ (1..200000000) }}`, "value exceeds"},
		{"captured work", `{% capture c %}{% for i in (1..90000) %}{{ chunk }}{% endfor %}{% endcapture %}`, "work budget"},
	}
	chunk := strings.Repeat("y", 1000)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := prompt.Render(testAgent(tt.tmpl), prompt.Context{Parameters: map[string]any{"chunk": chunk}, Now: fixedNow})
			var rf *agents.RenderFailureError
			if !errors.As(err, &rf) {
				t.Fatalf("Render = %.40q, %v; want *RenderFailureError", got.Text, err)
			}
			if agents.CodeOf(err) != agents.CodeRenderFailure {
				t.Errorf("code = %q", agents.CodeOf(err))
			}
			if rf.Err == nil {
				t.Errorf("RenderFailureError.Err is nil; want the cause")
			}
			if !strings.Contains(rf.Reason, tt.want) {
				t.Errorf("Reason = %q, want it to contain %q", rf.Reason, tt.want)
			}
		})
	}
}

func TestRenderConcurrent(t *testing.T) {
	a := testAgent(`{% for i in items %}{{ forloop.index }}{{ i | upcase }}{% endfor %}{{ name }}{% assign n = name | size %}{{ n }}`,
		agent.PromptParameter{Name: "items", Type: "array"}, agent.PromptParameter{Name: "name", Type: "string"})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 16 {
		wg.Go(func() {
			for i := range 50 {
				name := strings.Repeat("n", g+1)
				got, err := prompt.Render(a, prompt.Context{Parameters: map[string]any{"items": []any{"a", "b"}, "name": name}, Now: fixedNow})
				want := "1A2B" + name + strings.TrimSpace(strings.Repeat(" ", 0)) + itoa(len(name))
				if err != nil || got.Text != want {
					errs <- errors.New("goroutine got " + got.Text + ", want " + want)
					return
				}
				if i%10 == 0 {
					// Misses on other keys while this one is cached.
					_, _ = prompt.Render(testAgent("{{ x }}"+name), prompt.Context{Parameters: map[string]any{"x": 1}})
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func TestAutoInjectedVarsAreReservedByDefine(t *testing.T) {
	if diff := cmp.Diff([]string{"today", "now", "agent", "conversation"}, prompt.AutoInjectedVars); diff != "" {
		t.Errorf("AutoInjectedVars (-want +got):\n%s", diff)
	}
	for _, name := range prompt.AutoInjectedVars {
		_, err := agent.Define(agent.Spec{
			ID: "acme.x", Version: "1.0.0", Name: "X", Instructions: "hi",
			Parameters:   []agent.PromptParameter{{Name: name, Type: "string"}},
			Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		})
		if agents.CodeOf(err) != agents.CodeInvalidAgent {
			t.Errorf("Define with parameter %q: %v, want invalid-agent", name, err)
		}
	}
}
