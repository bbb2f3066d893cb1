package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kindgi/agents/pack"
	"github.com/kindgi/agents/pack/packtest"
)

func TestBootFailsOnUnregisteredModule(t *testing.T) {
	t.Parallel()
	p := launch(t, []string{"KINDGI_PACK_SERVICE_TOKEN=" + token, "PORT=0"}, "--host", "127.0.0.1", "--index", "broken-index.json")
	if code := p.wait(t, 30*time.Second); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	lines := p.stderr()
	if len(lines) != 1 {
		t.Fatalf("stderr has %d lines, want 1:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	var line struct {
		Kind     string   `json:"kind"`
		Problems []string `json:"problems"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
		t.Fatalf("not JSON: %s", lines[0])
	}
	want := []string{`module "missing" named by the index is not registered in this binary`}
	if diff := cmp.Diff(want, line.Problems); line.Kind != "boot-failed" || diff != "" {
		t.Errorf("kind %q, problems (-want +got):\n%s", line.Kind, diff)
	}
}

func TestBootFailsWithoutToken(t *testing.T) {
	t.Parallel()
	p := launch(t, []string{"PORT=0"}, "--index", "index.json")
	if code := p.wait(t, 30*time.Second); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	if lines := p.stderr(); len(lines) != 1 || !strings.Contains(lines[0], `"kind":"boot-failed"`) {
		t.Errorf("stderr: %q", lines)
	}
}

// TestConformance runs the black-box suite against the binary, with cases
// for every outcome of the demo tools.
func TestConformance(t *testing.T) {
	t.Parallel()
	check := func(content string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"v": 2, "kind": "check-invoke", "check": map[string]any{"id": "demo.no-digits"},
			"config": map[string]any{}, "trace": map[string]any{"response": map[string]any{"content": content}}})
		return b
	}
	passed := func(want bool) func([]byte) error {
		return func(b []byte) error {
			var r reply
			if err := json.Unmarshal(b, &r); err != nil {
				return err
			}
			if r.Result.Passed != want {
				return fmt.Errorf("passed %v, want %v", r.Result.Passed, want)
			}
			return nil
		}
	}
	packtest.Run(t, packtest.Target{
		Token: token,
		Start: func(ctx context.Context) (string, func(), error) {
			p := start(t, nil)
			return p.url, func() { p.sigterm(t); p.wait(t, 15*time.Second) }, nil
		},
		Cases: []packtest.Case{
			{Name: "echo", Request: json.RawMessage(toolCall("demo.echo", map[string]any{"text": "hi"})), WantKind: "result",
				Verify: func(b []byte) error {
					if !strings.Contains(string(b), `"output":{"text":"hi"}`) {
						return fmt.Errorf("echo output")
					}
					return nil
				}},
			{Name: "echo input invalid", Request: json.RawMessage(toolCall("demo.echo", map[string]any{"text": 1})), WantKind: "error", WantCode: pack.CodeInputValidationFailed},
			{Name: "echo extra property", Request: json.RawMessage(toolCall("demo.echo", map[string]any{"text": "a", "b": 1})), WantKind: "error", WantCode: pack.CodeInputValidationFailed},
			{Name: "sleep", Request: json.RawMessage(toolCall("demo.sleep", map[string]any{"ms": 1})), WantKind: "result"},
			{Name: "sleep negative", Request: json.RawMessage(toolCall("demo.sleep", map[string]any{"ms": -5})), WantKind: "error", WantCode: pack.CodeInputValidationFailed},
			{Name: "sleep past deadline", Request: json.RawMessage(toolCall("demo.sleep", map[string]any{"ms": 5000})), TimeoutMs: 50, WantKind: "error", WantCode: pack.CodeDeadlineExceeded},
			{Name: "fail", Request: json.RawMessage(toolCall("demo.fail", map[string]any{})), WantKind: "error", WantCode: pack.CodeHandlerThrow,
				Verify: func(b []byte) error {
					if !strings.Contains(string(b), "boom") {
						return fmt.Errorf("no boom")
					}
					return nil
				}},
			{Name: "bad output", Request: json.RawMessage(toolCall("demo.bad-output", map[string]any{})), WantKind: "error", WantCode: pack.CodeOutputValidationFailed},
			{Name: "env", Request: json.RawMessage(toolCall("demo.env", map[string]any{})), WantKind: "result"},
			{Name: "no-digits passes", Request: check("all words"), WantKind: "check-result", Verify: passed(true)},
			{Name: "no-digits fails", Request: check("42 words"), WantKind: "check-result", Verify: passed(false)},
		},
	})
}

// TestTokenInvisibleAndMissingEnv: the pack code does not see the service
// token; DEMO_REGION is reported missing (the service is still ready,
// strict env being off) until it is set.
func TestTokenInvisibleAndMissingEnv(t *testing.T) {
	t.Parallel()
	for _, region := range []string{"", "eu-west-1"} {
		t.Run("region="+region, func(t *testing.T) {
			var env []string
			if region != "" {
				env = append(env, "DEMO_REGION="+region)
			}
			p := start(t, env)
			// Not even through the kernel's copy of the start environment.
			if environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.cmd.Process.Pid)); err == nil {
				if strings.Contains(string(environ), token) {
					t.Errorf("/proc/%d/environ still holds the token", p.cmd.Process.Pid)
				}
				if region != "" && !strings.Contains(string(environ), "DEMO_REGION="+region) {
					t.Errorf("/proc/%d/environ lost DEMO_REGION", p.cmd.Process.Pid)
				}
			} else if runtime.GOOS == "linux" {
				t.Errorf("reading the service's environ: %v", err)
			}
			r := p.mustInvoke(t, toolCall("demo.env", map[string]any{}))
			want := fmt.Sprintf(`{"tokenVisible":false,"region":%q}`, region)
			if r.Kind != "result" || string(r.Output) != want {
				t.Errorf("demo.env: %s %s, want %s", r.Kind, r.Output, want)
			}
			res, body, err := p.request(t.Context(), http.MethodGet, pack.PathInfo, map[string]string{pack.HeaderToken: token}, nil)
			if err != nil || res.StatusCode != 200 {
				t.Fatalf("info: %v %v", err, res)
			}
			var info pack.Info
			if err := json.Unmarshal(body, &info); err != nil {
				t.Fatal(err)
			}
			wantMissing := []string{"DEMO_REGION"}
			if region != "" {
				wantMissing = []string{}
			}
			if diff := cmp.Diff(wantMissing, info.MissingEnv); diff != "" {
				t.Errorf("missingEnv (-want +got):\n%s", diff)
			}
			if res, _, err := p.request(t.Context(), http.MethodGet, pack.PathReadyz, nil, nil); err != nil || res.StatusCode != 200 {
				t.Errorf("readyz: %v %v", err, res)
			}
		})
	}
}

// TestConcurrencyCapAndCancel: with the cap at 1 a second call is refused
// 503 with Retry-After; a caller closing its connection cancels the
// handler (logged as cancelled), which frees the slot.
func TestConcurrencyCapAndCancel(t *testing.T) {
	t.Parallel()
	p := start(t, []string{"KINDGI_PACK_SERVICE_MAX_CONCURRENCY=1"})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		// The poll below competes for the single slot: a sleeper that
		// arrives while a poll holds it is refused, so it tries again.
		for {
			_, status, err := p.invoke(ctx, toolCall("demo.sleep", map[string]any{"ms": 30000}), pack.HeaderRequestID, "leaver")
			if err == nil && status == http.StatusServiceUnavailable {
				time.Sleep(2 * time.Millisecond)
				continue
			}
			done <- err
			return
		}
	}()
	// Poll until the sleeper holds the slot: the next call is refused.
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, body, err := p.request(t.Context(), http.MethodPost, pack.PathInvoke, invokeHeaders(), toolCall("demo.echo", map[string]any{"text": "x"}))
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode == http.StatusServiceUnavailable {
			if res.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			break
		}
		if res.StatusCode != 200 || time.Now().After(deadline) {
			t.Fatalf("the cap never refused a call: %d %s", res.StatusCode, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled call did not fail on the client side")
	}
	line := p.waitLine(t, func(m map[string]any) bool { return m["code"] == pack.CodeCancelled })
	if line["toolId"] != "demo.sleep" || line["requestId"] != "leaver" {
		t.Errorf("cancel log line: %v", line)
	}
	// The slot is free again once the cancelled handler has returned. The
	// cancel is answered (and logged) by the watchdog as soon as the caller
	// leaves, while the handler may still be unwinding, and the cap counts
	// handlers really running: poll for the slot rather than race it.
	deadline = time.Now().Add(10 * time.Second)
	for {
		r, status, err := p.invoke(t.Context(), toolCall("demo.echo", map[string]any{"text": "x"}))
		if err != nil {
			t.Fatal(err)
		}
		if status == http.StatusOK {
			if r.Kind != "result" {
				t.Errorf("after the cancel: %+v", r)
			}
			break
		}
		if status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("after the cancel: status %d, the slot was never released", status)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSmallLoadAgainstBinary: with the cap at 2, every call of a burst is
// either answered with its result or refused 503 with Retry-After.
func TestSmallLoadAgainstBinary(t *testing.T) {
	t.Parallel()
	p := start(t, []string{"KINDGI_PACK_SERVICE_MAX_CONCURRENCY=2"})
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 15 {
				r, status, err := p.invoke(context.Background(), toolCall("demo.sleep", map[string]any{"ms": 2}))
				if err != nil || (status == 200 && r.Kind != "result") {
					status = -1
				}
				mu.Lock()
				counts[status]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if counts[200]+counts[503] != 240 || counts[200] == 0 {
		t.Errorf("outcomes by status: %v", counts)
	}
	t.Logf("outcomes by status: %v", counts)
}

// TestDrainOnSIGTERM: after SIGTERM, /readyz and new invokes answer 503
// while the call in progress finishes with its result; then exit 0.
func TestDrainOnSIGTERM(t *testing.T) {
	t.Parallel()
	p := start(t, nil)
	type outcome struct {
		r      reply
		status int
		err    error
	}
	inflight := make(chan outcome, 1)
	go func() {
		r, status, err := p.invoke(context.Background(), toolCall("demo.sleep", map[string]any{"ms": 1500}))
		inflight <- outcome{r, status, err}
	}()
	time.Sleep(300 * time.Millisecond) // the call is in progress
	p.sigterm(t)
	waitStatus(t, p, pack.PathReadyz, http.StatusServiceUnavailable)
	res, body, err := p.request(t.Context(), http.MethodPost, pack.PathInvoke, invokeHeaders(), toolCall("demo.echo", map[string]any{"text": "late"}))
	if err != nil || res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Errorf("new invoke while draining: %v %v %s", err, res, body)
	}
	o := <-inflight
	if o.err != nil || o.status != 200 || o.r.Kind != "result" {
		t.Fatalf("in-flight call: %+v", o)
	}
	var out struct {
		SleptMs int `json:"sleptMs"`
	}
	if err := json.Unmarshal(o.r.Output, &out); err != nil || out.SleptMs < 1500 {
		t.Errorf("in-flight output %s", o.r.Output)
	}
	if code := p.wait(t, 10*time.Second); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
}

// TestDrainGivesUpAfter8s: a call still running 8 s after SIGTERM is
// cancelled and the process exits 0.
func TestDrainGivesUpAfter8s(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 8 s")
	}
	t.Parallel()
	p := start(t, nil)
	inflight := make(chan reply, 1)
	go func() {
		r, _, _ := p.invoke(context.Background(), toolCall("demo.sleep", map[string]any{"ms": 60000}))
		inflight <- r
	}()
	time.Sleep(300 * time.Millisecond)
	began := time.Now()
	p.sigterm(t)
	if code := p.wait(t, 20*time.Second); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if d := time.Since(began); d < 7*time.Second || d > 12*time.Second {
		t.Errorf("exited %v after SIGTERM, want about 8 s", d)
	}
	if r := <-inflight; r.Kind != "" && r.Code != pack.CodeCancelled {
		t.Errorf("the unfinished call answered %+v, want cancelled (or no answer)", r)
	}
}

// waitStatus polls path until it answers want (10 s at most).
func waitStatus(t *testing.T, p *proc, path string, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, _, err := p.request(t.Context(), http.MethodGet, path, nil, nil)
		if err == nil && res.StatusCode == want {
			if want == http.StatusServiceUnavailable && res.Header.Get("Retry-After") == "" {
				t.Errorf("%s 503 without Retry-After", path)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never answered %d (last: %v %v)", path, want, res, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
