package prompt_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/prompt"
)

// TestLiquidJSConstructs: the constructs LiquidJS accepts that agent
// authors use render as LiquidJS renders them (outputs taken from
// liquidjs 10.30.1; TestLiquidJSDifferential checks them against it when
// Node is present). These ran into parse errors or other output before.
func TestLiquidJSConstructs(t *testing.T) {
	params := map[string]any{"s": "  ", "a": []any{}, "m": map[string]any{}, "x": "v", "n": 7.0, "z": nil}
	tests := []struct{ name, tmpl, want string }{
		{"empty literal", `{% if a == empty %}e{% endif %}{% if empty == a %}e{% endif %}{% if x != empty %}n{% endif %}`, "een"},
		{"empty map", `{% if m == empty %}e{% endif %}`, "e"},
		{"blank literal", `{% if s == blank %}b{% endif %}{% if z == blank %}b{% endif %}{% if x == blank %}X{% endif %}`, "bb"},
		{"empty prints nothing", `[{{ empty }}{{ blank }}]`, "[]"},
		{"null literal", `{% if z == null %}n{% endif %}{{ null }}`, "n"},
		{"nil literal", `{% if z == nil %}n{% endif %}`, "n"},
		{"echo", `{% echo x | upcase %}`, "V"},
		{"liquid tag", "{% liquid\n  assign y = x | append: '!'\n  if y\n    echo y\n  endif\n%}", "v!"},
		{"liquid comment line", "{% liquid\n  # note\n  echo 'ok'\n%}", "ok"},
		{"increment", `{% increment c %}{% increment c %}{{ c }}`, "012"},
		{"decrement", `{% decrement c %}{% decrement c %}`, "-1-2"},
		{"increment from a parameter", `{% increment n %}{% increment n %}{{ n }}`, "789"},
		{"increment beside assign", `{% assign c = 10 %}{% increment c %}{{ c }}`, "010"},
		{"inline comment", `a{% # note %}b{%- # trimmed -%} c`, "abc"},
		{"cycle", `{% for i in (1..4) %}{% cycle 'a', 'b', 'c' %}{% endfor %}`, "abca"},
		{"cycle groups", `{% cycle 'g': 'a', 'b' %}{% cycle 'h': 'a', 'b' %}{% cycle 'g': 'a', 'b' %}`, "aab"},
		{"and/or from the right", `{% if false and false or true %}y{% else %}n{% endif %}`, "n"},
		{"JSON number in a range", `{% for i in (1..n) %}{{ i }}{% endfor %}`, "1234567"},
		{"JavaScript division", `{{ n | divided_by: 2 }}`, "3.5"},
		{"property of nil in an output", `[{{ z.name }}]`, "[]"},
		{"whitespace control", "a \n {%- if true -%} \n b \n {%- endif -%} \n c", "abc"},
		{"trim stops at a tag", "x {% assign q = 1 %}{{- 'y' }}", "x y"},
		{"string filter on a list", `{{ a | concat: "b" | upcase }}`, "B"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := prompt.Render(testAgent(tt.tmpl), prompt.Context{Parameters: params, Now: fixedNow})
			if err != nil || got.Text != tt.want {
				t.Fatalf("Render(%q) = %q, %v; want %q", tt.tmpl, got.Text, err, tt.want)
			}
		})
	}
	// Filters LiquidJS does not have are refused, as it refuses them with
	// strictFilters.
	for _, f := range []string{"handleize", "pluralize", "type"} {
		_, err := prompt.Render(testAgent("{{ x | "+f+" }}"), prompt.Context{Parameters: params})
		var rf *agents.RenderFailureError
		if !errors.As(err, &rf) || !strings.Contains(err.Error(), "undefined filter") {
			t.Errorf("filter %s: %v, want undefined filter", f, err)
		}
	}
}

// TestIssue27Table: the templates of issue 27's table render as liquidjs
// 10.30.1 renders them (strictVariables, strictFilters, TZ=UTC); the
// corpus runs them against LiquidJS itself.
func TestIssue27Table(t *testing.T) {
	params := map[string]any{
		"ship": map[string]any{"captain": map[string]any{"name": "first mate"}},
		"recs": []any{map[string]any{"name": "Ann", "age": 30}, map[string]any{"name": "Bob", "age": 25}, map[string]any{"name": "Cy", "age": 35}},
	}
	tests := []struct{ tmpl, want string }{
		{`{{ "a<!-- x -->b<script>var z;</script>c<br/>d" | strip_html }}`, "abcd"},
		{`{{ "2024-03-05T10:20:30+02:00" | date: "%H:%M" }}`, "08:20"},
		{`{% if (1..3) contains 2 %}in range{% endif %}`, "in range"},
		{`{% for i in (5..3) %}{{ i }}{% else %}none{% endfor %}`, "none"},
		{`{% for ch in "abc" %}[{{ ch }}]{% endfor %}`, "[abc]"},
		{`{% if ship.captain contains "first" %}key{% else %}nokey{% endif %}`, "nokey"},
		{`{{ 1.005 | round: 2 }}`, "1.01"},
		{`{{ recs | where_exp: "r", "r.age > 28" | map: "name" | join: "," }}`, "Ann,Cy"},
		{`{{ recs | find_exp: "r", "r.age < 30" | map: "name" }}`, "Bob"},
		{`{% for i in (1..5) reversed limit: 2 %}{{ i }}{% endfor %}`, "21"},
		{`{% tablerow r in recs cols: 2 %}{{ tablerowloop.col }}:{{ r.name }}{% endtablerow %}`,
			`<tr class="row1"><td class="col1">1:Ann</td><td class="col2">2:Bob</td></tr><tr class="row2"><td class="col1">1:Cy</td></tr>`},
	}
	for _, tt := range tests {
		got, err := prompt.Render(testAgent(tt.tmpl), prompt.Context{Parameters: params, Now: fixedNow})
		if err != nil || got.Text != tt.want {
			t.Errorf("Render(%q) = %q, %v; want %q", tt.tmpl, got.Text, err, tt.want)
		}
	}
}

// TestCycleAndCountersAreRaceFree: cycle and increment keep their state in
// the render, so concurrent renders of one cached template each start from
// the beginning (run with -race).
func TestCycleAndCountersAreRaceFree(t *testing.T) {
	a := testAgent(`{% for i in (1..5) %}{% cycle "a", "b" %}{% increment k %}{% endfor %}`)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 8 {
		wg.Go(func() {
			for range 50 {
				got, err := prompt.Render(a, prompt.Context{Now: fixedNow})
				if err != nil || got.Text != "a0b1a2b3a4" {
					errs <- errors.New("got " + got.Text)
					return
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
