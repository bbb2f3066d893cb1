package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/kindgi/agents/mcp"
)

// The test binary is also the MCP server: run with this variable set, it
// serves on stdio instead of running the tests.
const serveEnv = "KINDGI_EXAMPLE_MCP_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		if err := serve(context.Background()); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestRun: the example's turn calls the search tool of the clause server,
// started over stdio, and completes.
func TestRun(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := capture(t, func() error {
		return run(t.Context(), mcp.Server{Prefix: "clauses", Command: self, Env: map[string]string{serveEnv: "1"}})
	})
	for _, want := range []string{
		"tool clauses.search@1.0.0: Search the firm's clause library by keyword. (read-only: true)",
		`tool.started   clauses.search@1.0.0 {"query":"confidentiality"}`,
		`tool.completed clauses.search@1.0.0 {"clauses":[{"id":"C-7","text":"Mutual confidentiality`,
		"status completed",
		"response: Clause C-7 covers mutual confidentiality for three years.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// capture returns what fn prints to stdout.
func capture(t *testing.T, fn func() error) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() { _, _ = io.Copy(&buf, r); close(done) }()
	runErr := fn()
	os.Stdout = stdout
	_ = w.Close()
	<-done
	if runErr != nil {
		t.Fatal(runErr)
	}
	return buf.String()
}
