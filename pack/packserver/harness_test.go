package packserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kindgi/agents/examples/packservice/demo"
	"github.com/kindgi/agents/pack"
	"github.com/kindgi/agents/pack/packserver"
)

const testToken = "test-token-0123456789"

// probe is the instrumented module "probe": its handlers count their runs
// per request id and track how many run at once.
type probe struct {
	mu      sync.Mutex
	runs    map[string]int
	running atomic.Int64
	maxRun  atomic.Int64
	// release unblocks probe.block calls.
	release chan struct{}
	// started receives one value per probe.block call that started.
	started chan string
	// sawCtxErr receives the context error probe.block saw.
	sawCtxErr chan error
}

func newProbe() *probe {
	return &probe{
		runs:      map[string]int{},
		release:   make(chan struct{}),
		started:   make(chan string, 100),
		sawCtxErr: make(chan error, 100),
	}
}

func (p *probe) count(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runs[id]
}

func (p *probe) enter(id string) func() {
	p.mu.Lock()
	p.runs[id]++
	p.mu.Unlock()
	n := p.running.Add(1)
	for {
		m := p.maxRun.Load()
		if n <= m || p.maxRun.CompareAndSwap(m, n) {
			break
		}
	}
	return func() { p.running.Add(-1) }
}

// sleep sleeps for the input's ms without looking at its context and
// answers with the call's request id: probe.count (counted by enter) and
// probe.ignore-ctx (a tool that ignores cancellation).
func (p *probe) sleep(_ context.Context, input json.RawMessage, call pack.CallContext) (any, error) {
	defer p.enter(call.RequestID)()
	var in struct {
		Ms int `json:"ms"`
	}
	_ = json.Unmarshal(input, &in)
	time.Sleep(time.Duration(in.Ms) * time.Millisecond)
	return map[string]any{"requestId": call.RequestID}, nil
}

func (p *probe) module() packserver.Module {
	return packserver.Module{
		Name: "probe",
		Tools: map[string]packserver.ToolHandler{
			"probe.count": p.sleep,
			"probe.block": func(ctx context.Context, _ json.RawMessage, call pack.CallContext) (any, error) {
				defer p.enter(call.RequestID)()
				p.started <- call.RequestID
				select {
				case <-p.release:
					return map[string]any{"requestId": call.RequestID}, nil
				case <-ctx.Done():
					p.sawCtxErr <- ctx.Err()
					return nil, ctx.Err()
				}
			},
			"probe.ignore-ctx": p.sleep,
			"probe.panic": func(context.Context, json.RawMessage, pack.CallContext) (any, error) {
				panic("kaboom")
			},
			"probe.raw": func(_ context.Context, input json.RawMessage, _ pack.CallContext) (any, error) {
				var in struct {
					Raw string `json:"raw"`
				}
				_ = json.Unmarshal(input, &in)
				return json.RawMessage(in.Raw), nil
			},
		},
		Checks: map[string]packserver.CheckHandler{
			"probe.check-panic": func(context.Context, json.RawMessage, json.RawMessage) (pack.CheckOutcome, error) {
				panic(fmt.Errorf("check exploded"))
			},
		},
	}
}

var anyObject = json.RawMessage(`{"type":"object"}`)

// demoIndexFile is the index of the demo pack service.
const demoIndexFile = "../../examples/packservice/index.json"

// demoIndex loads the index of the demo pack service.
func demoIndex(t testing.TB) *packserver.Index {
	t.Helper()
	idx, err := packserver.LoadIndex(demoIndexFile)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// demoService is the demo pack service as examples/packservice serves it,
// with token.
func demoService(ctx context.Context, token string) (*packserver.Server, error) {
	idx, err := packserver.LoadIndex(demoIndexFile)
	if err != nil {
		return nil, err
	}
	return packserver.New(ctx, idx, []packserver.Module{demo.Module()}, &packserver.Options{Token: token})
}

// testIndex is the demo index plus the probe module.
func testIndex(t testing.TB) *packserver.Index {
	t.Helper()
	idx := demoIndex(t)
	idx.Modules = append(idx.Modules, "probe")
	for _, id := range []string{"probe.count", "probe.block", "probe.ignore-ctx", "probe.panic", "probe.raw"} {
		idx.Tools = append(idx.Tools, packserver.IndexTool{ID: id, Version: "0.1.0", Module: "probe", InputSchema: anyObject, OutputSchema: anyObject})
	}
	idx.Guardrails = append(idx.Guardrails, packserver.IndexGuardrail{ID: "probe-guard", CheckID: "probe.check-panic", Module: "probe"})
	return idx
}

// harness is an in-process service on a loopback listener.
type harness struct {
	srv   *packserver.Server
	http  *httptest.Server
	probe *probe
}

func newHarness(t testing.TB, opts *packserver.Options) *harness {
	t.Helper()
	if opts == nil {
		opts = &packserver.Options{}
	}
	if opts.Token == "" {
		opts.Token = testToken
	}
	p := newProbe()
	srv, err := packserver.New(context.Background(), testIndex(t), []packserver.Module{demo.Module(), p.module()}, opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		close(p.release)
		hs.Close()
	})
	return &harness{srv: srv, http: hs, probe: p}
}

// toolCall returns an invoke request body.
func toolCall(id, requestID string, input any) []byte {
	b, err := json.Marshal(map[string]any{
		"v": 2, "kind": "invoke", "tool": map[string]any{"id": id}, "input": input,
		"ctx": map[string]any{"tenantId": "t1", "runId": "run1", "requestId": requestID},
	})
	if err != nil {
		panic(err)
	}
	return b
}

// invokeRequest is a POST of body to base's /v1/invoke with the JSON
// content type and the token, as a pack client sends it.
func invokeRequest(ctx context.Context, base string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+pack.PathInvoke, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(pack.HeaderToken, testToken)
	return req, nil
}

// invokeInProcess serves invokeRequest's request on h with no network and
// returns what h wrote.
func invokeInProcess(ctx context.Context, h http.Handler, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, pack.PathInvoke, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(pack.HeaderToken, testToken)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// do sends body to /v1/invoke with the token and returns status, headers
// and body. Extra headers are name, value pairs. Safe off the test
// goroutine.
func (h *harness) do(ctx context.Context, body []byte, extra ...string) (int, http.Header, []byte, error) {
	req, err := invokeRequest(ctx, h.http.URL, body)
	if err != nil {
		return 0, nil, nil, err
	}
	for i := 0; i+1 < len(extra); i += 2 {
		req.Header.Set(extra[i], extra[i+1])
	}
	res, err := h.http.Client().Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b, err
}

// post is do for the test goroutine: a transport failure is fatal.
func (h *harness) post(ctx context.Context, t testing.TB, body []byte, extra ...string) (int, http.Header, []byte) {
	t.Helper()
	status, hdr, b, err := h.do(ctx, body, extra...)
	if err != nil {
		t.Fatal(err)
	}
	return status, hdr, b
}

// call posts body and decodes the 200 answer (fatal otherwise).
func (h *harness) call(ctx context.Context, t testing.TB, body []byte, extra ...string) message {
	t.Helper()
	m, err := decodeMsg(h.post(ctx, t, body, extra...))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// callAsync runs call on another goroutine and delivers the message (or
// the error) on the returned channel.
func (h *harness) callAsync(body []byte, extra ...string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		status, hdr, b, err := h.do(context.Background(), body, extra...)
		if err != nil {
			ch <- result{err: err}
			return
		}
		m, err := decodeMsg(status, hdr, b)
		ch <- result{m: m, err: err}
	}()
	return ch
}

type result struct {
	m   message
	err error
}

// message is a decoded response message.
type message struct {
	Kind    string            `json:"kind"`
	Code    string            `json:"code"`
	Message string            `json:"message"`
	ToolID  string            `json:"toolId"`
	CheckID string            `json:"checkId"`
	Output  json.RawMessage   `json:"output"`
	Result  pack.CheckOutcome `json:"result"`
	Cause   *pack.Cause       `json:"cause"`
	Issues  []pack.Issue      `json:"issues"`
}

// decodeMsg checks a 200 answer is a valid response message with the
// invoke headers, and decodes it.
func decodeMsg(status int, hdr http.Header, body []byte) (message, error) {
	if status != http.StatusOK {
		return message{}, fmt.Errorf("status %d, want 200: %s", status, body)
	}
	if issues := pack.ValidateResponse(body); len(issues) > 0 {
		return message{}, fmt.Errorf("answer is not a valid response message: %v\n%s", issues, body)
	}
	if got := hdr.Get(pack.HeaderArtifactVersion); got != "demo-1.0.0+example" {
		return message{}, fmt.Errorf("%s = %q", pack.HeaderArtifactVersion, got)
	}
	if hdr.Get(pack.HeaderDurationMs) == "" {
		return message{}, fmt.Errorf("no %s header", pack.HeaderDurationMs)
	}
	var m message
	err := json.Unmarshal(body, &m)
	return m, err
}

func TestMain(m *testing.M) {
	// The service token must never be inherited by handlers through the
	// test process either.
	os.Unsetenv(packserver.EnvToken)
	if which := os.Getenv(benchChildEnv); which != "" {
		os.Exit(serveBenchChild(which))
	}
	os.Exit(m.Run())
}
