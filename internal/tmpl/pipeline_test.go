package tmpl

import (
	"fmt"
	"testing"
)

// TestPipelineMatchesTheEngine renders outputs of the compiled shape with
// their pipeline and with osteele/liquid's evaluation of the whole
// expression (the pipeline dropped), and requires the same text and the
// same error. (Both call the same metered filter wrappers.)
func TestPipelineMatchesTheEngine(t *testing.T) {
	vars := map[string]any{
		"s": "a,b,c", "t": "Tail", "n": 7, "f": 2.5, "zero": 0, "nilv": nil, "yes": true,
		"xs": []any{"pear", "apple", "fig"}, "m": map[string]any{"k": "v", "inner": map[string]any{"x": 1}},
		"empty_list": []any{}, "bytes": []byte("raw"),
	}
	outputs := []string{
		`s | upcase`, `t | downcase | capitalize`, `s | default: 'y'`, `nilv | default: 'y'`, `missing | default: 'y'`,
		`missing | upcase`, `n | plus: 2`, `n | plus: f`, `n | divided_by: 0`, `n | divided_by: 2`, `f | times: 3`,
		`s | append: t | upcase`, `xs | join: ', '`, `xs | first | upcase`, `xs | sort | last`, `xs | size`,
		`m.k | size`, `m.missing | upcase`, `m.inner.x | plus: 1`, `nilv.k | upcase`, `s | truncate: 3`,
		`s | slice: 1, 2`, `s | split: ',' | join: '-'`, `s | replace: 'a', t`, `'abc' | upcase`, `3 | times: 2.5`,
		`-3 | abs`, `s | plus: 'x'`, `xs | concat: xs | size`, `empty_list | first | default: 'none'`,
		`yes | default: 'no'`, `zero | default: 1`, `bytes | upcase`, `s | split: missing`, `n | minus: -1.5`,
		`s | prepend: "q'q"`, `xs | map: 'x' | join`, `m | json`, `s | slice: 1, missing`, `xs | join: t | size`,
		`s | truncatewords: 1, '…'`, `s | escape | url_encode`, `n | at_least: 9 | at_most: 8`,
		`s | slice: 'a'`, `n | round: 'x'`, `xs | where`, `s | truncate: 'x'`, `m | sort: 1`, `n | date: 'x', 3`,
	}
	for _, src := range outputs {
		t.Run(src, func(t *testing.T) {
			tmplSrc := "<{{ " + src + " }}>"
			withPipe, err := Parse(tmplSrc)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			compiled := false
			for _, info := range withPipe.infos {
				compiled = compiled || info.pipe != nil
			}
			if !compiled {
				t.Fatalf("%s is not compiled to a pipeline", src)
			}
			whole, _ := Parse(tmplSrc)
			for i := range whole.infos {
				whole.infos[i].pipe = nil
			}
			got, gerr := withPipe.Render(vars)
			want, werr := whole.Render(vars)
			if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Fatalf("pipeline: %q, %v\nengine:   %q, %v", got, gerr, want, werr)
			}
		})
	}
}

// TestPipelineShape: only a receiver and positional arguments that are
// variable paths or literals are compiled.
func TestPipelineShape(t *testing.T) {
	for src, want := range map[string]bool{
		`x | upcase`:                          true,
		`x.y.z | default: 'a', 2, -1.5, w`:    true,
		`"lit" | append: 'b|c'`:               true,
		`x`:                                   false,
		`x | default: 'a', allow_false: true`: false,
		`xs[0] | upcase`:                      false,
		`(1..3) | join`:                       false,
		`x | slice: 1,`:                       false,
		`x | f: (1..2)`:                       false,
		`x | `:                                false,
		`x == y | upcase`:                     false,
		`x | contains`:                        false,
		`'unterminated | upcase`:              false,
	} {
		if got := compilePipeline(src) != nil; got != want {
			t.Errorf("compilePipeline(%q) compiled = %v, want %v", src, got, want)
		}
	}
}
