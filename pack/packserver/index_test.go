package packserver_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kindgi/agents/pack/packserver"
)

func TestParseIndex(t *testing.T) {
	const schemas = `"inputSchema":{"type":"object"},"outputSchema":{"type":"object"}`
	tests := []struct {
		name string
		doc  string
		want []string // substrings of the problems; nil means valid
	}{
		{"minimal", `{"packId":"p","packVersion":"1.0.0","artifactVersion":"a","modules":[],"tools":[]}`, nil},
		{"full", `{"packId":"p","packVersion":"1.2.3-rc.1","artifactVersion":"a","modules":["m"],
			"tools":[{"id":"t","version":"1.0.0","module":"m","description":"d",` + schemas + `}],
			"guardrails":[{"id":"g","checkId":"c","module":"m"},{"id":"c2","module":"m"}],
			"requiredEnv":["X"],"strictEnv":true}`, nil},
		{"empty object", `{}`, []string{"packId is required", "packVersion is required", "artifactVersion is required"}},
		{"not JSON", `{"packId":`, []string{"index: "}},
		{"trailing data", `{"packId":"p","packVersion":"1.0.0","artifactVersion":"a"} {}`, []string{"trailing data"}},
		{"unknown field", `{"packId":"p","packVersion":"1.0.0","artifactVersion":"a","requiredEnvs":["X"]}`, []string{`unknown field "requiredEnvs"`}},
		{"bad pack version", `{"packId":"p","packVersion":"v1","artifactVersion":"a"}`, []string{`packVersion "v1" is not a semantic version`}},
		{"tool problems", `{"packId":"p","packVersion":"1.0.0","artifactVersion":"a","modules":["m","m",""],
			"tools":[{"id":"t","version":"1","module":"x"},{"id":"t","version":"1.0.0","module":"m",` + schemas + `},{"version":"1.0.0","module":"m",` + schemas + `}]}`,
			[]string{`modules[1] "m" is listed twice`, "modules[2] is empty", `tools[0].version "1" is not a semantic version`,
				`tools[0].module "x" is not one of modules`, "tools[0].inputSchema is required", "tools[0].outputSchema is required",
				`tools[1].id "t" is listed twice`, "tools[2].id is required"}},
		{"guardrail problems", `{"packId":"p","packVersion":"1.0.0","artifactVersion":"a","modules":["m"],
			"guardrails":[{"id":"g","module":"m"},{"id":"h","checkId":"g","module":"m"},{"module":"m"},{"id":"k","module":"z"}],"requiredEnv":[""]}`,
			[]string{`guardrails[1] check id "g" is listed twice`, "guardrails[2].id is required", `guardrails[3].module "z" is not one of modules`, "requiredEnv[0] is empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx, err := packserver.ParseIndex([]byte(tt.doc))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if idx.PackID != "p" {
					t.Errorf("packId %q", idx.PackID)
				}
				return
			}
			var be *packserver.BootError
			if !errors.As(err, &be) {
				t.Fatalf("err = %v, want *BootError", err)
			}
			all := strings.Join(be.Problems, "\n")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("problems lack %q:\n%s", w, all)
				}
			}
			if len(be.Problems) < len(tt.want) {
				t.Errorf("%d problems for %d expected:\n%s", len(be.Problems), len(tt.want), all)
			}
		})
	}
}

func TestIndexKeysAndMissingEnv(t *testing.T) {
	if k := (packserver.IndexGuardrail{ID: "g", CheckID: "c"}).Key(); k != "c" {
		t.Errorf("key with checkId = %q", k)
	}
	if k := (packserver.IndexGuardrail{ID: "g"}).Key(); k != "g" {
		t.Errorf("key without checkId = %q", k)
	}
	idx := &packserver.Index{RequiredEnv: []string{"B", "A", "SET", "EMPTY", "B"}}
	env := map[string]string{"SET": "x", "EMPTY": ""}
	got := idx.MissingEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if diff := cmp.Diff([]string{"A", "B", "EMPTY"}, got); diff != "" {
		t.Errorf("missing env (-want +got):\n%s", diff)
	}
	if got := (&packserver.Index{}).MissingEnv(func(string) (string, bool) { return "", false }); got == nil || len(got) != 0 {
		t.Errorf("no required env: %#v, want an empty non-nil slice", got)
	}
}

func TestLoadIndexMissingFile(t *testing.T) {
	_, err := packserver.LoadIndex(t.TempDir() + "/nope.json")
	var be *packserver.BootError
	if !errors.As(err, &be) || !strings.Contains(be.Error(), "nope.json") {
		t.Errorf("err = %v", err)
	}
}
