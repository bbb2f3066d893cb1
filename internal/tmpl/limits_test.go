package tmpl

import (
	"errors"
	"strings"
	"testing"

	"github.com/osteele/liquid/values"
)

func TestSizeOf(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want int
	}{
		{"nil", nil, 0},
		{"string", "abcd", 4},
		{"int", 7, 8},
		{"list", []any{"ab", "c"}, 2*16 + 3},
		{"typed list", []string{"ab", "c"}, 2*16 + 3},
		{"reflected list", []int{1, 2}, 2*16 + 2*8},
		{"map", map[string]any{"k": "vv"}, 16 + 1 + 2},
		{"range", values.NewRange(1, 10), 10 * 24},
		{"huge range is not expanded", values.NewRange(1, 2_000_000_000), 2_000_000_000 * 24},
	}
	for _, tt := range tests {
		if got := sizeOf(tt.v, 1<<40); got != tt.want {
			t.Errorf("%s: sizeOf = %d, want %d", tt.name, got, tt.want)
		}
	}
	// Measuring stops once the budget is passed.
	big := make([]any, 1000)
	for i := range big {
		big[i] = strings.Repeat("x", 100)
	}
	if got := sizeOf(big, 20000); got > 20000+100 {
		t.Errorf("sizeOf with budget 20000 = %d, want it to stop early", got)
	}
}

func TestRenderBounds(t *testing.T) {
	tests := []struct {
		name, src string
		limit     string
	}{
		{"output", `{% for i in (1..2000) %}{{ s }}{% endfor %}`, "output"},
		{"iterations", `{% for i in (1..200000000) %}{% endfor %}`, "iterations"},
		{"nested iterations", `{% for i in (1..1000) %}{% for j in (1..1000) %}{% endfor %}{% endfor %}`, "iterations"},
		{"tablerow iterations", `{% capture c %}{% tablerow i in (1..200000000) %}{% endtablerow %}{% endcapture %}`, "iterations"},
		// tablerow's own markup panics on a failed write; the panic is recovered.
		{"tablerow output", `{% tablerow i in (1..200000000) %}{% endtablerow %}`, "output"},
		{"value", `{% assign x = s %}{% for i in (1..20) %}{% assign x = x | append: x %}{% endfor %}`, "value"},
		{"work", `{% capture c %}{% for i in (1..50000) %}{{ s }}{% endfor %}{% endcapture %}`, "work"},
	}
	vars := map[string]any{"s": strings.Repeat("z", 1000)}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, err := Parse(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tp.Render(vars)
			var le *LimitError
			if !errors.As(err, &le) || le.Limit != tt.limit {
				t.Fatalf("Render error = %v, want a %q LimitError", err, tt.limit)
			}
		})
	}
}

func TestRenderDoesNotModifyVars(t *testing.T) {
	tp, err := Parse(`{% assign a = "x" %}{% capture c %}y{% endcapture %}{{ a }}{{ c }}`)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]any{"k": 1}
	out, err := tp.Render(vars)
	if err != nil || out != "xy" {
		t.Fatalf("Render = %q, %v", out, err)
	}
	if len(vars) != 1 {
		t.Errorf("vars = %v, want it unchanged", vars)
	}
}
