package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kindgi/agents/pack"
)

const token = "example-token-5f3a"

// binary is the example service, built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "packservice-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "packservice")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the example service:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is one running service process.
type proc struct {
	cmd  *exec.Cmd
	port int
	url  string

	mu    sync.Mutex
	lines []string // stderr lines so far
	more  chan struct{}
	exit  chan struct{} // closed when the process has exited
	err   error         // Wait's error, once exit is closed
}

// baseEnv is the test's environment without the variables the service
// reads, so a test sets exactly what it means.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "KINDGI_PACK_SERVICE_TOKEN", "PORT", "KINDGI_PACK_SERVICE_MAX_CONCURRENCY", "DEMO_REGION":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// launch starts the binary; env entries are NAME=value. It does not wait
// for the listening line. The process is killed at the end of the test if
// it is still running.
func launch(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(baseEnv(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, more: make(chan struct{}, 1), exit: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
			select {
			case p.more <- struct{}{}:
			default:
			}
		}
		p.err = cmd.Wait()
		close(p.exit)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exit:
		default:
			_ = cmd.Process.Kill()
			<-p.exit
		}
		if t.Failed() {
			t.Logf("service stderr:\n%s", strings.Join(p.stderr(), "\n"))
		}
	})
	return p
}

// start launches the service on a free loopback port and waits for its
// listening line.
func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	if len(args) == 0 {
		args = []string{"--index", "index.json"}
	}
	args = append([]string{"--host", "127.0.0.1"}, args...)
	env = append([]string{"KINDGI_PACK_SERVICE_TOKEN=" + token, "PORT=0"}, env...)
	p := launch(t, env, args...)
	line := p.waitLine(t, func(m map[string]any) bool { return m["kind"] == "listening" })
	port, ok := line["port"].(float64)
	if !ok || port <= 0 {
		t.Fatalf("listening line without a port: %v", line)
	}
	p.port = int(port)
	p.url = fmt.Sprintf("http://127.0.0.1:%d", p.port)
	return p
}

func (p *proc) stderr() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// waitLine waits up to 30 s for a JSON stderr line matching match.
func (p *proc) waitLine(t *testing.T, match func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.After(30 * time.Second)
	seen := 0
	for {
		lines := p.stderr()
		for ; seen < len(lines); seen++ {
			var m map[string]any
			if json.Unmarshal([]byte(lines[seen]), &m) == nil && match(m) {
				return m
			}
		}
		select {
		case <-p.more:
		case <-p.exit:
			if len(p.stderr()) == seen {
				t.Fatalf("the service exited (%v) without the awaited line", p.err)
			}
		case <-deadline:
			t.Fatal("no awaited stderr line within 30 s")
		}
	}
}

// wait waits up to d for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.exit:
	case <-time.After(d):
		t.Fatalf("the service did not exit within %v", d)
	}
	return p.cmd.ProcessState.ExitCode()
}

// request sends one request; body nil means none. Safe off the test
// goroutine.
func (p *proc) request(ctx context.Context, method, path string, hdr map[string]string, body []byte) (*http.Response, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.url+path, rd)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res, b, err
}

// invokeHeaders are the headers of an authorised invoke.
func invokeHeaders(extra ...string) map[string]string {
	h := map[string]string{"Content-Type": "application/json", pack.HeaderToken: token}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	return h
}

// toolCall is an invoke request body.
func toolCall(id string, input any) []byte {
	b, _ := json.Marshal(map[string]any{"v": 2, "kind": "invoke", "tool": map[string]any{"id": id}, "input": input,
		"ctx": map[string]any{"tenantId": "t1", "runId": "run1"}})
	return b
}

// reply is a decoded response message.
type reply struct {
	Kind   string            `json:"kind"`
	Code   string            `json:"code"`
	ToolID string            `json:"toolId"`
	Output json.RawMessage   `json:"output"`
	Result pack.CheckOutcome `json:"result"`
}

// invoke posts a call and decodes the 200 answer, checking it against the
// protocol schema and its headers. Safe off the test goroutine.
func (p *proc) invoke(ctx context.Context, body []byte, extra ...string) (reply, int, error) {
	res, b, err := p.request(ctx, http.MethodPost, pack.PathInvoke, invokeHeaders(extra...), body)
	if err != nil {
		return reply{}, 0, err
	}
	if res.StatusCode != http.StatusOK {
		return reply{}, res.StatusCode, nil
	}
	if issues := pack.ValidateResponse(b); len(issues) > 0 {
		return reply{}, 200, fmt.Errorf("invalid response %v: %s", issues, b)
	}
	if res.Header.Get(pack.HeaderArtifactVersion) != "demo-1.0.0+example" || res.Header.Get(pack.HeaderDurationMs) == "" {
		return reply{}, 200, fmt.Errorf("invoke headers missing: %v", res.Header)
	}
	var r reply
	return r, 200, json.Unmarshal(b, &r)
}

// mustInvoke is invoke on the test goroutine, requiring a 200.
func (p *proc) mustInvoke(t *testing.T, body []byte, extra ...string) reply {
	t.Helper()
	r, status, err := p.invoke(t.Context(), body, extra...)
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusOK {
		t.Fatalf("status %d, want 200", status)
	}
	return r
}

// sigterm sends SIGTERM to the process.
func (p *proc) sigterm(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}
