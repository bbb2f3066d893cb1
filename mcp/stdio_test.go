package mcp_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/mcp"
)

// binDir holds the test server program, built once per test binary and
// removed by TestMain.
var (
	binDir   string
	binOnce  sync.Once
	binPath  string
	binError error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kindgi-mcp-test-")
	if err != nil {
		panic(err)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// serverProgram builds testdata/server (the test server over stdio) with
// go build, once.
func serverProgram(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		binPath = filepath.Join(binDir, "mcp-test-server")
		out, err := exec.Command(goTool, "build", "-o", binPath, "./testdata/server").CombinedOutput()
		if err != nil {
			binError = errors.New("go build ./testdata/server: " + err.Error() + "\n" + string(out))
		}
	})
	if binError != nil {
		t.Fatal(binError)
	}
	return binPath
}

// pidOf asks the server its process id.
func pidOf(t *testing.T, tt bindings.TenantTools) int {
	t.Helper()
	out, err := tt.Invoke(t.Context(), bindings.ToolDescriptor{ID: "s.pid", Version: "1.3.0"}, json.RawMessage(`{}`), bindings.CallContext{})
	if err != nil {
		t.Fatal(err)
	}
	var blocks []struct{ Text string }
	if err := json.Unmarshal(out, &blocks); err != nil || len(blocks) != 1 {
		t.Fatalf("pid output %s: %v", out, err)
	}
	pid, err := strconv.Atoi(blocks[0].Text)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// gone reports whether no process pid exists any more (exited and reaped).
func gone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// TestStdio: a stdio server is started on first use with its environment
// (Env, and nothing of the host's but a few basics); a server killed in
// the middle of a call fails that call with tool-invocation-failed and the
// next call starts it again; Close leaves no process behind.
func TestStdio(t *testing.T) {
	bin := serverProgram(t)
	dir := t.TempDir()
	t.Setenv("KINDGI_MCP_TEST_HOST_SECRET", "leaked")
	src := newSource(t, mcp.Options{})
	if err := src.AddServer("acme", mcp.Server{Prefix: "s", Command: bin,
		Env: map[string]string{"MCPTEST_VERSION": "1.3.0", "MCPTEST_DIR": dir}}); err != nil {
		t.Fatal(err)
	}
	tt := src.ForTenant("acme")

	d := resolve(t, tt, "s.echo", "~1.3.0")
	out, err := tt.Invoke(t.Context(), d, json.RawMessage(`{"text":"over stdio"}`), bindings.CallContext{RequestID: "req-7"})
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, out, `{"text":"over stdio","requestId":"req-7"}`)
	getenv := resolve(t, tt, "s.getenv", "*")
	for name, want := range map[string]string{"MCPTEST_DIR": dir, "KINDGI_MCP_TEST_HOST_SECRET": "<unset>"} {
		out, err := tt.Invoke(t.Context(), getenv, json.RawMessage(`{"text":"`+name+`"}`), bindings.CallContext{})
		if err != nil {
			t.Fatal(err)
		}
		jsonEqual(t, out, `{"text":"`+want+`","requestId":""}`)
	}

	first := pidOf(t, tt)
	block := resolve(t, tt, "s.block", "*")
	done := make(chan error, 1)
	go func() {
		_, err := tt.Invoke(t.Context(), block, json.RawMessage(`{}`), bindings.CallContext{RequestID: "req-8"})
		done <- err
	}()
	waitFile(t, filepath.Join(dir, "started"))
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if agents.CodeOf(err) != agents.CodeToolInvocationFailed {
			t.Fatalf("call to a killed server: %v, want tool-invocation-failed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("call to a killed server did not return")
	}

	out, err = tt.Invoke(t.Context(), d, json.RawMessage(`{"text":"again"}`), bindings.CallContext{RequestID: "req-9"})
	if err != nil {
		t.Fatalf("call after the server died: %v", err)
	}
	jsonEqual(t, out, `{"text":"again","requestId":"req-9"}`)
	second := pidOf(t, tt)
	if second == first {
		t.Fatalf("the server was not started again (pid %d)", first)
	}

	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{first, second} {
		if !gone(pid) {
			t.Errorf("server process %d still exists after Close", pid)
		}
	}
}

// TestStdioCannotStart: a command that cannot run is
// tool-invocation-failed, at resolution as at a call.
func TestStdioCannotStart(t *testing.T) {
	src := newSource(t, mcp.Options{})
	if err := src.AddServer("acme", mcp.Server{Prefix: "s", Command: filepath.Join(t.TempDir(), "missing"), Version: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	tt := src.ForTenant("acme")
	if _, err := tt.Resolve(t.Context(), agentRef("s.echo")); agents.CodeOf(err) != agents.CodeToolInvocationFailed {
		t.Errorf("resolve: %v, want tool-invocation-failed", err)
	}
	_, err := tt.Invoke(t.Context(), bindings.ToolDescriptor{ID: "s.echo", Version: "1.0.0"}, json.RawMessage(`{}`), bindings.CallContext{})
	var ie *agents.ToolInvocationError
	if !errors.As(err, &ie) || ie.ToolID != "s.echo" || ie.ToolVersion != "1.0.0" {
		t.Errorf("invoke: %v, want tool-invocation-failed naming s.echo@1.0.0", err)
	}
}

// TestConnectTimeout: a command that never answers the handshake fails
// resolution with tool-invocation-failed within Options.ConnectTimeout
// (plus the time to stop it), not never.
func TestConnectTimeout(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	src := newSource(t, mcp.Options{ConnectTimeout: 200 * time.Millisecond})
	if err := src.AddServer("acme", mcp.Server{Prefix: "s", Command: sleep, Args: []string{"30"}, Version: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = src.ForTenant("acme").Resolve(t.Context(), agentRef("s.echo"))
	if agents.CodeOf(err) != agents.CodeToolInvocationFailed {
		t.Errorf("resolve against a silent server: %v, want tool-invocation-failed", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("resolve took %v", d)
	}
}
