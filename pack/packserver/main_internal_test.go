package packserver

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// bootOutput runs the process entry point and decodes its one stderr line.
func bootOutput(t *testing.T, args []string, modules []Module) (int, bootLine) {
	t.Helper()
	var stderr bytes.Buffer
	code := run(args, modules, &stderr)
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("stderr has %d lines, want 1:\n%s", len(lines), stderr.String())
	}
	var line bootLine
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
		t.Fatalf("stderr line is not JSON: %v: %s", err, lines[0])
	}
	return code, line
}

// moduleIndex writes, in a fresh directory, an index naming one module m
// and no tools, and returns the directory and the index's path.
func moduleIndex(t *testing.T) (dir, index string) {
	t.Helper()
	dir = t.TempDir()
	index = dir + "/index.json"
	doc := `{"packId":"p","packVersion":"1.0.0","artifactVersion":"a","modules":["m"],"tools":[]}`
	if err := os.WriteFile(index, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, index
}

func TestRunBootFailures(t *testing.T) {
	dir, index := moduleIndex(t)
	tests := []struct {
		name  string
		env   map[string]string
		args  []string
		want  []string
		notIn string
	}{
		{"no token", map[string]string{EnvToken: ""}, []string{"--index", index}, []string{EnvToken + " is unset or empty"}, ""},
		{"no index flag", map[string]string{EnvToken: "s"}, nil, []string{"--index is required"}, ""},
		{"unknown flag", map[string]string{EnvToken: "s"}, []string{"--index", index, "--verbose"}, []string{"arguments: flag provided but not defined: -verbose"}, ""},
		{"stray argument", map[string]string{EnvToken: "s"}, []string{"--index", index, "extra"}, []string{`arguments: unexpected ["extra"]`}, ""},
		{"bad port", map[string]string{EnvToken: "s", EnvPort: "http"}, []string{"--index", index}, []string{`PORT="http" is not a port number`}, ""},
		{"bad cap", map[string]string{EnvToken: "s", EnvMaxConcurrency: "-1"}, []string{"--index", index}, []string{EnvMaxConcurrency + `="-1"`}, ""},
		{"index relative to module root", map[string]string{EnvToken: "s", EnvPort: "0"}, []string{"--module-root", dir, "--index", "index.json"}, []string{`module "m" named by the index is not registered`}, ""},
		{"missing index file", map[string]string{EnvToken: "s"}, []string{"--index", dir + "/none.json"}, []string{"none.json"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			code, line := bootOutput(t, tt.args, nil)
			if code != 1 || line.Kind != "boot-failed" {
				t.Fatalf("exit %d, line %+v", code, line)
			}
			all := strings.Join(line.Problems, "\n")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("problems lack %q:\n%s", w, all)
				}
			}
			if _, ok := os.LookupEnv(EnvToken); ok {
				t.Errorf("%s is still in the environment", EnvToken)
			}
		})
	}
}

// TestTokenRemovedBeforeInit: module Init runs with the token already gone
// from the environment.
func TestTokenRemovedBeforeInit(t *testing.T) {
	_, index := moduleIndex(t)
	t.Setenv(EnvToken, "super-secret")
	var sawToken, ran bool
	var sawEnviron string
	m := Module{Name: "m", Init: func(context.Context) error {
		ran = true
		_, sawToken = os.LookupEnv(EnvToken)
		sawEnviron = strings.Join(os.Environ(), "\n")
		return context.Canceled // stop the boot here: the test is about what Init saw
	}}
	code, line := bootOutput(t, []string{"--index", index}, []Module{m})
	if !ran {
		t.Fatal("Init did not run")
	}
	if sawToken || strings.Contains(sawEnviron, "super-secret") {
		t.Error("Init saw the service token")
	}
	if code != 1 || line.Kind != "boot-failed" || !strings.Contains(strings.Join(line.Problems, ""), `module "m": init failed`) {
		t.Errorf("exit %d, line %+v", code, line)
	}
}
