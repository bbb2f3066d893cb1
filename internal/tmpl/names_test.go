package tmpl

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestExprRefs(t *testing.T) {
	tests := []struct {
		expr        string
		wantVars    [][]string
		wantFilters []string
	}{
		{"x", [][]string{{"x"}}, nil},
		{"x.y.z", [][]string{{"x", "y", "z"}}, nil},
		{"x.size", [][]string{{"x", "size"}}, nil},
		{"xs[0].name", [][]string{{"xs"}}, nil},
		{"xs[key]", [][]string{{"xs"}, {"key"}}, nil},
		{`xs["key"]`, [][]string{{"xs"}}, nil},
		{"a | default: b, allow_false: true", [][]string{{"a"}, {"b"}}, []string{"default"}},
		{`"a b" | append: c | upcase`, [][]string{{"c"}}, []string{"append", "upcase"}},
		{"a and b or c contains d", [][]string{{"a"}, {"b"}, {"c"}, {"d"}}, nil},
		{"a == nil or b != empty", [][]string{{"a"}, {"b"}, {"empty"}}, nil},
		{"(1..n)", [][]string{{"n"}}, nil},
		{"(a..b)", [][]string{{"a"}, {"b"}}, nil},
		{"1.5 | plus: x", [][]string{{"x"}}, []string{"plus"}},
		{"-3 | abs", nil, []string{"abs"}},
		{"my-var", [][]string{{"my-var"}}, nil},
		{"empty? or x", [][]string{{"empty?"}, {"x"}}, nil},
		{"x.empty?", [][]string{{"x", "empty?"}}, nil},
		{"x x.y x", [][]string{{"x"}, {"x", "y"}}, nil},
		{`'it''s'`, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			vars, fs := exprRefs(tt.expr)
			if diff := cmp.Diff(tt.wantVars, vars, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("vars (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantFilters, fs, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("filters (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTagRefs(t *testing.T) {
	tests := []struct {
		name, args string
		want       [][]string
	}{
		{"for", "item in items limit: n offset: 2 reversed", [][]string{{"items"}, {"n"}}},
		{"for", "i in (1..top)", [][]string{{"top"}}},
		{"tablerow", "c in cells cols: width", [][]string{{"cells"}, {"width"}}},
		{"assign", "x = y | append: z", [][]string{{"y"}, {"z"}}},
		{"if", "a.b > 2", [][]string{{"a", "b"}}},
		{"when", `"a", b`, [][]string{{"b"}}},
		{"capture", "name", nil},
		{"break", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name+" "+tt.args, func(t *testing.T) {
			got, _ := tagRefs(tt.name, tt.args)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMissingProperty(t *testing.T) {
	scope := map[string]any{
		"m":    map[string]any{"a": map[string]string{"b": "c"}, "n": nil},
		"list": []any{1},
		"nil":  nil,
	}
	tests := []struct {
		path []string
		want string
	}{
		{[]string{"m"}, ""},
		{[]string{"absent"}, "absent"},
		{[]string{"absent", "x"}, "absent"},
		{[]string{"m", "a", "b"}, ""},
		{[]string{"m", "a", "x"}, "m.a.x"},
		{[]string{"m", "zz"}, "m.zz"},
		{[]string{"m", "n"}, ""},
		{[]string{"m", "n", "deeper"}, "m.n.deeper"},
		{[]string{"list", "first"}, ""},
		{[]string{"nil"}, ""},
		{[]string{"nil", "x"}, "nil.x"},
	}
	for _, tt := range tests {
		if got := missingProperty(tt.path, scope); got != tt.want {
			t.Errorf("missingProperty(%v) = %q, want %q", tt.path, got, tt.want)
		}
	}
}
