package prompt_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/prompt"
)

// TestDateTimeZones: the date filters show times in UTC unless
// Context.Location names a zone, offsets and daylight saving time applied
// as LiquidJS applies them in a process with that TZ. The wants are
// liquidjs 10.30.1's output under TZ=UTC, TZ=America/New_York and
// TZ=Asia/Kolkata (the differential runs Node with TZ=UTC).
func TestDateTimeZones(t *testing.T) {
	const tmpl = `{{ t | date: "%Y-%m-%d %H:%M %z" }}|{{ u | date: "%Y-%m-%d %H:%M %z" }}|{{ v | date: "%H:%M %z" }}|{{ w | date: "%H:%M %z" }}|{{ "2024-03-05T10:20:30+02:00" | date: "%H:%M %z" }}|{{ "2024-07-04 12:00" | date: "%H:%M %z" }}|{{ 1700000000 | date: "%Y-%m-%d %H:%M" }}|{{ "2024-07-04 12:00" | date_to_xmlschema }}`
	params := map[string]any{
		"t": "2024-03-10T06:59:00Z", // a minute before New York springs forward
		"u": "2024-03-10T07:00:00Z", // the instant it does
		"v": "2024-11-03T05:30:00Z", // 01:30 EDT, before it falls back
		"w": "2024-11-03T06:30:00Z", // 01:30 EST, after
	}
	load := func(name string) *time.Location {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	tests := []struct {
		name string
		loc  *time.Location
		want string
	}{
		{"nil is UTC", nil, "2024-03-10 06:59 +0000|2024-03-10 07:00 +0000|05:30 +0000|06:30 +0000|08:20 +0000|12:00 +0000|2023-11-14 22:13|2024-07-04T12:00:00+00:00"},
		{"New York, across both DST changes", load("America/New_York"), "2024-03-10 01:59 -0500|2024-03-10 03:00 -0400|01:30 -0400|01:30 -0500|03:20 -0500|12:00 -0400|2023-11-14 17:13|2024-07-04T12:00:00-04:00"},
		{"Kolkata, a half-hour offset", load("Asia/Kolkata"), "2024-03-10 12:29 +0530|2024-03-10 12:30 +0530|11:00 +0530|12:00 +0530|13:50 +0530|12:00 +0530|2023-11-15 03:43|2024-07-04T12:00:00+05:30"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := prompt.Render(testAgent(tmpl), prompt.Context{Parameters: params, Now: fixedNow, Location: tt.loc})
			if err != nil || got.Text != tt.want {
				t.Fatalf("Render = %q, %v\nwant     %q", got.Text, err, tt.want)
			}
		})
	}
}

// TestDefineRefusals: every construct the package documentation lists as
// refused is refused by agent.Define, with a message that names it and
// says what LiquidJS would do.
func TestDefineRefusals(t *testing.T) {
	tests := []struct{ name, tmpl, want string }{
		{"include", `{% include 'x' %}`, "{% include %} is refused: it renders another template file, and a prompt has none (LiquidJS would read it"},
		{"render", `{% render 'x' %}`, "{% render %} is refused: it renders another template file"},
		{"layout", `{% layout 'x' %}`, "{% layout %} is refused: it renders the template inside another template file"},
		{"block", `{% block b %}x{% endblock %}`, "{% block %} is refused: it only has a meaning inside a layout, which is refused (LiquidJS renders its body"},
		{"diamond", `{% if n <> 7 %}y{% endif %}`, "the operator <> is refused: LiquidJS has no such operator and reads every comparison written with it as false"},
		{"filter in a for collection", `{% for i in arr | reverse %}{{ i }}{% endfor %}`, "a filter in a for tag's collection is refused: LiquidJS ignores it"},
		{"filter in a tablerow collection", `{% tablerow i in arr | reverse %}{{ i }}{% endtablerow %}`, "a filter in a tablerow tag's collection is refused: LiquidJS ignores it"},
		{"trimmed endraw", `a {%- raw -%} {{x}} {%- endraw -%} b`, "a trimmed {%- endraw -%} is refused: LiquidJS does not end a raw block"},
		{"empty filter", `{{ s | }}`, "an empty filter after | is refused: LiquidJS ignores it"},
		{"exponent", `{{ 1e3 }}`, "the number 1e3 is refused: LiquidJS reads a number with an exponent as a variable name"},
		{"nil to json", `{{ nil | json }}`, "the literal nil given to json is refused: LiquidJS's nil literal is an object there, printed {}"},
		{"break in a tablerow", `{% tablerow i in (1..3) %}{% if i == 2 %}{% break %}{% endif %}{{ i }}{% endtablerow %}`, "{% break %} in a tablerow is refused: LiquidJS does not stop the tablerow at it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := agent.Define(agent.Spec{ID: "acme.test", Version: "1.0.0", Name: "Test", Instructions: tt.tmpl})
			var inv *agents.InvalidAgentError
			if !errors.As(err, &inv) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Define = %v; want *InvalidAgentError containing %q", err, tt.want)
			}
		})
	}
}
