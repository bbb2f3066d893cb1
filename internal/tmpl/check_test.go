package tmpl

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		source  string
		wantErr string // substring; "" means no error
	}{
		{"plain text", "hello", ""},
		{"spec example", "You draft contract clauses for {{ firmName }}. Today is {{ today }}.", ""},
		{"if block", "{% if a %}x{% else %}y{% endif %}", ""},
		{"for block", "{% for i in (1..3) %}{{ i }}{% endfor %}", ""},
		{"raw keeps delimiters", "{% raw %}{{ not closed {% endraw %}", ""},
		{"multi-line output", "{{ a\n | upcase }}", ""},
		{"quoted closer", `{{ "}}" | size }}`, "Liquid"},
		{"unclosed output", "Hi {{ firmName", `output "{{ firmName" not closed`},
		{"unclosed tag", "Hi {% if x", `tag "{% if x" not closed`},
		{"unclosed output line 2", "a\nb {{ x", "line 2, col 3"},
		{"unclosed quote", `{{ "abc }}`, "unterminated quoted string"},
		{"unterminated block", "{% if x %}y", `unterminated "if" block`},
		{"unknown tag", "{% frobnicate %}", `undefined tag "frobnicate"`},
		{"include refused", `{% include "x" %}`, `{% include %} is refused`},
		{"cycle", `{% for i in (1..2) %}{% cycle "a", "b" %}{% endfor %}`, ""},
		{"empty output", "{{}}", "cannot parse output"},
		{"nameless tag", "{% %}", "cannot parse tag"},
		{"nameless tag on line 3", "x\ny\nz {% %}", "line 3, col 3"},
		{"inline comment", "a\n{% # note %}", ""},
		{"unclosed raw", "{% raw %}abc", "raw"},
		{"raw swallowed by a later closer", "{% raw %}{{ a {% endraw %} b }}", "cannot find this {% endraw %}"},
		{"raw with closed markup", "{% raw %}{{ a }} {% if %}{% endraw %}{{ b }}", ""},
		{"multibyte excerpt", "{{ ééééééééééééééééééééé", "not closed"},
		{"bad expression", "{{ a | }}", "Liquid"},
		// osteele/liquid's lexer panics on this one (found by FuzzRender).
		{"non-ASCII identifier", "{{\u0658}}", "syntax error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.source)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Check(%q) = %v, want nil", tt.source, err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("Check(%q) = nil, want error containing %q", tt.source, tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("Check(%q) = %q, want it to contain %q", tt.source, err, tt.wantErr)
			}
		})
	}
}
