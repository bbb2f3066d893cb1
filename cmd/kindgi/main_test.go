package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/agents/internal/pgtest"
)

// binary is the kindgi command built once for the package's tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kindgi-cmd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "kindgi")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building kindgi: %v\n%s", err, out)
		os.Exit(1)
	}
	// The tests that need PostgreSQL share one database of the package's
	// own, migrated by the schema of this tree (a database another tree
	// migrated may hold an older baseline).
	drop := func() error { return nil }
	if admin := os.Getenv("KINDGI_TEST_DATABASE_URL"); admin != "" {
		var u string
		if u, drop, err = pgtest.Create(admin, "kindgi_cmd_"); err != nil {
			fmt.Fprintf(os.Stderr, "creating the test database: %v\n", err)
			os.Exit(1)
		}
		os.Setenv("KINDGI_TEST_DATABASE_URL", u)
		// Migrated before any test, so that a test that serves the
		// database (the console) finds the schema whichever runs first.
		if out, err := exec.Command(binary, "migrate", "--database-url", u).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "migrating the test database: %v\n%s", err, out)
			_ = drop()
			os.Exit(1)
		}
	}
	code := m.Run()
	if err := drop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

func kindgi(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running kindgi %v: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

const example = "../../examples/agents/contract-drafter.yaml"

func TestValidateExampleExitsZero(t *testing.T) {
	r := kindgi(t, "validate", example)
	if r.code != 0 || r.stdout != example+": ok\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestValidateFiveProblemsPrintsFiveLines(t *testing.T) {
	file := "testdata/five-problems.yaml"
	r := kindgi(t, "validate", file, example)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 6 || lines[5] != example+": ok" {
		t.Fatalf("%d lines, want 5 issues and %q:\n%s", len(lines), example+": ok", r.stdout)
	}
	lines = lines[:5]
	wantPaths := []string{"id", "version", "capabilities", "tools[0].version", "budget.maxSteps"}
	for i, l := range lines {
		prefix := file + ": " + wantPaths[i] + ": "
		if !strings.HasPrefix(l, prefix) || len(l) == len(prefix) {
			t.Errorf("line %d = %q, want prefix %q and a message", i, l, prefix)
		}
	}
}

func TestValidateJSON(t *testing.T) {
	r := kindgi(t, "validate", "--json", "testdata/five-problems.yaml")
	if r.code != 1 {
		t.Fatalf("exit %d", r.code)
	}
	var issues []fileIssue
	if err := json.Unmarshal([]byte(r.stdout), &issues); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
	if len(issues) != 5 || issues[3].Path != "tools[0].version" || issues[3].File != "testdata/five-problems.yaml" {
		t.Errorf("issues = %+v", issues)
	}
	if r := kindgi(t, "validate", "--json", example); r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("valid file: exit %d, stdout %q", r.code, r.stdout)
	}
}

func TestValidateMissingFile(t *testing.T) {
	r := kindgi(t, "validate", "testdata/nope.yaml")
	if r.code != 1 || !strings.Contains(r.stdout, "testdata/nope.yaml: (file): ") {
		t.Errorf("exit %d stdout %q", r.code, r.stdout)
	}
}

func TestRender(t *testing.T) {
	r := kindgi(t, "render", example, "--param", "firmName=Acme LLP", "--now", "2026-11-29T10:00:00Z")
	if r.code != 0 {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	if want := "You draft contract clauses for Acme LLP. Today is 2026-11-29.\n"; r.stdout != want {
		t.Errorf("stdout = %q, want %q", r.stdout, want)
	}
}

func TestRenderMissingParameterIsCoded(t *testing.T) {
	r := kindgi(t, "render", example, "--now", "2026-11-29T10:00:00Z")
	if r.code != 1 || !strings.Contains(r.stderr, "missing-parameter") || !strings.Contains(r.stderr, "firmName") || r.stdout != "" {
		t.Errorf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestRenderUndeclaredParamIsAnError(t *testing.T) {
	r := kindgi(t, "render", example, "--param", "firmName=Acme LLP", "--param", "frimName=typo", "--now", "2026-11-29T10:00:00Z")
	if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, `no parameter "frimName"`) || !strings.Contains(r.stderr, "firmName") {
		t.Errorf("exit %d stdout %q stderr %q, want 2 naming the undeclared and the declared parameters", r.code, r.stdout, r.stderr)
	}
}

func TestErrorsPrintTheirCodeOnce(t *testing.T) {
	if r := kindgi(t, "migrate", "--database-url", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2"); r.code != 1 ||
		!strings.HasPrefix(r.stderr, "kindgi migrate: persistence-error: ") || strings.Contains(r.stderr, "persistence error") {
		t.Errorf("unreachable database: exit %d stderr %q, want \"kindgi migrate: persistence-error: …\" once", r.code, r.stderr)
	}
}

func TestRenderBadCommandLines(t *testing.T) {
	for _, args := range [][]string{
		{"render"},
		{"render", example, "--now", "yesterday"},
		{"render", example, "--param", "noequals"},
	} {
		if r := kindgi(t, args...); r.code != 2 || r.stderr == "" {
			t.Errorf("kindgi %v: exit %d stderr %q, want 2 and a message", args, r.code, r.stderr)
		}
	}
}

func TestHelpOnEveryCommand(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"validate", "--help"}, {"render", "--help"}, {"migrate", "--help"},
		{"pack", "--help"}, {"pack", "probe", "--help"}, {"prune", "--help"},
	} {
		r := kindgi(t, args...)
		if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "usage: kindgi") {
			t.Errorf("kindgi %v: exit %d, output %q", args, r.code, r.stdout+r.stderr)
		}
	}
	if r := kindgi(t); r.code != 2 {
		t.Errorf("no command: exit %d, want 2", r.code)
	}
	if r := kindgi(t, "frobnicate"); r.code != 2 || !strings.Contains(r.stderr, "unknown command") {
		t.Errorf("unknown command: exit %d stderr %q", r.code, r.stderr)
	}
}

func TestMigrate(t *testing.T) {
	url := os.Getenv("KINDGI_TEST_DATABASE_URL")
	if url == "" {
		t.Skip("KINDGI_TEST_DATABASE_URL is not set")
	}
	first := kindgi(t, "migrate", "--database-url", url)
	second := kindgi(t, "migrate", "--database-url", url)
	if first.code != 0 || second.code != 0 || !strings.HasPrefix(first.stdout, "schema version ") || first.stdout != second.stdout {
		t.Fatalf("first %+v second %+v", first, second)
	}
	if r := kindgi(t, "migrate", "--database-url", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2"); r.code != 1 || !strings.Contains(r.stderr, "persistence-error") {
		t.Errorf("unreachable database: %+v", r)
	}
}

// startPackService builds and starts examples/packservice on a free port and
// returns its base URL.
func startPackService(t *testing.T, token string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "packservice")
	if out, err := exec.Command("go", "build", "-o", bin, "../../examples/packservice").CombinedOutput(); err != nil {
		t.Fatalf("building the pack service: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--index", "../../examples/packservice/index.json", "--host", "127.0.0.1")
	cmd.Env = append(os.Environ(), "PORT=0", "KINDGI_PACK_SERVICE_TOKEN="+token)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ports := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line struct {
				Kind string `json:"kind"`
				Port int    `json:"port"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Kind == "listening" {
				ports <- line.Port
			}
		}
		close(ports)
	}()
	select {
	case port, ok := <-ports:
		if !ok {
			t.Fatal("the pack service exited before listening")
		}
		return fmt.Sprintf("http://127.0.0.1:%d", port)
	case <-time.After(30 * time.Second):
		t.Fatal("the pack service did not report listening")
	}
	return ""
}

func TestPackProbe(t *testing.T) {
	url := startPackService(t, "probe-token")
	r := kindgi(t, "pack", "probe", "--url", url, "--token", "probe-token")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) < 10 || !strings.HasPrefix(lines[0], "PASS ") || !strings.HasSuffix(lines[len(lines)-1], " 0 failed") {
		t.Errorf("output:\n%s", r.stdout)
	}
	bad := kindgi(t, "pack", "probe", "--url", url, "--token", "wrong-token")
	if bad.code != 1 || bad.stdout != "" || strings.Count(bad.stderr, "\n") != 1 || !strings.Contains(bad.stderr, "refused the token") {
		t.Errorf("wrong token: exit %d, want 1 and one line on stderr\nstdout %q\nstderr %q", bad.code, bad.stdout, bad.stderr)
	}
	down := kindgi(t, "pack", "probe", "--url", "http://127.0.0.1:1", "--token", "probe-token")
	if down.code != 1 || down.stdout != "" || strings.Count(down.stderr, "\n") != 1 || !strings.Contains(down.stderr, "cannot connect") {
		t.Errorf("unreachable service: exit %d, want 1 and one line on stderr\nstdout %q\nstderr %q", down.code, down.stdout, down.stderr)
	}
	if r := kindgi(t, "pack", "probe", "--url", url); r.code != 2 {
		t.Errorf("missing token: exit %d", r.code)
	}
}

// triageFile is the agent package's example with sub-agents and handoffs.
const triageFile = "../../agent/testdata/triage.yaml"

// TestValidateSubAgents: validate accepts an agent file with subAgents and
// handoffs, and reports their problems with their paths.
func TestValidateSubAgents(t *testing.T) {
	if r := kindgi(t, "validate", triageFile); r.code != 0 || r.stdout != triageFile+": ok\n" {
		t.Fatalf("valid file: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	file := "testdata/subagent-problems.yaml"
	r := kindgi(t, "validate", "--json", file)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", r.code, r.stderr)
	}
	var issues []fileIssue
	if err := json.Unmarshal([]byte(r.stdout), &issues); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
	var got []string
	for _, is := range issues {
		got = append(got, is.Path)
		if is.File != file || is.Message == "" {
			t.Errorf("issue %+v: want file %s and a message", is, file)
		}
	}
	want := []string{"subAgents[0].version", "subAgents[2].id", "handoffs[0].name", "handoffs[1].id"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("paths = %v, want %v", got, want)
	}
}
