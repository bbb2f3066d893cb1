package scripted_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/providers/scripted"
)

func req(model string) bindings.GenerateRequest {
	return bindings.GenerateRequest{Model: model, Messages: []bindings.ChatMessage{{Role: bindings.ChatUser, Content: "hi"}}}
}

func TestPlaysTheScriptInOrder(t *testing.T) {
	p := scripted.New([]scripted.Response{
		scripted.Call("c1", "acme.search", map[string]string{"q": "nda"}).WithUsage(10, 2, 0.5),
		scripted.Say("done"),
	}, nil)
	ctx := t.Context()
	r1, err := p.Generate(ctx, req(scripted.DefaultModel))
	if err != nil {
		t.Fatal(err)
	}
	want := bindings.GenerateResponse{
		ToolCalls:    []bindings.ToolCall{{ID: "c1", Name: "acme.search", Arguments: []byte(`{"q":"nda"}`)}},
		FinishReason: "tool_calls", Model: scripted.DefaultModel, Usage: bindings.Usage{InputTokens: 10, OutputTokens: 2, CostUsd: 0.5},
	}
	if diff := cmp.Diff(want, r1); diff != "" {
		t.Errorf("first (-want +got):\n%s", diff)
	}
	r2, err := p.Generate(ctx, req(scripted.DefaultModel))
	if err != nil || r2.Text != "done" || r2.FinishReason != "stop" {
		t.Errorf("second = %+v, %v", r2, err)
	}
	if p.Remaining() != 0 || p.Calls() != 2 {
		t.Errorf("remaining %d, calls %d", p.Remaining(), p.Calls())
	}
}

func TestFailsLoudlyWhenExhausted(t *testing.T) {
	p := scripted.New([]scripted.Response{scripted.Say("only")}, nil)
	ctx := t.Context()
	if _, err := p.Generate(ctx, req(scripted.DefaultModel)); err != nil {
		t.Fatal(err)
	}
	_, err := p.Generate(ctx, req(scripted.DefaultModel))
	var mie *agents.ModelInvocationError
	if !errors.As(err, &mie) || !strings.Contains(err.Error(), "script exhausted: call 2, but the script has 1 responses") {
		t.Errorf("exhausted = %v", err)
	}
}

type fatalRecorder struct{ msgs []string }

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}

func TestFatalOption(t *testing.T) {
	rec := &fatalRecorder{}
	p := scripted.New(nil, &scripted.Options{Fatal: rec})
	if _, err := p.Generate(t.Context(), req(scripted.DefaultModel)); agents.CodeOf(err) != agents.CodeModelInvocationFailed {
		t.Errorf("err = %v", err)
	}
	if len(rec.msgs) != 1 || !strings.Contains(rec.msgs[0], "script exhausted") {
		t.Errorf("Fatalf calls = %q", rec.msgs)
	}
}

func TestErrorsAndModels(t *testing.T) {
	coded := &agents.ModelInvocationError{Provider: "x", Status: 429, Message: "slow down"}
	p := scripted.New([]scripted.Response{{Err: errors.New("boom")}, {Err: coded}}, &scripted.Options{ID: "p", Models: []bindings.ModelInfo{{ID: "m"}}})
	ctx := t.Context()
	if _, err := p.Generate(ctx, req("other")); agents.CodeOf(err) != agents.CodeModelInvocationFailed || !strings.Contains(err.Error(), "not served") {
		t.Errorf("unknown model = %v", err)
	}
	_, err := p.Generate(ctx, req("m"))
	var mie *agents.ModelInvocationError
	if !errors.As(err, &mie) || mie.Provider != "p" || mie.Err == nil {
		t.Errorf("uncoded error = %#v", err)
	}
	if _, err := p.Generate(ctx, req("m")); err != coded {
		t.Errorf("coded error = %v, want it unchanged", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Generate(cctx, req("m")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled = %v", err)
	}
}

func TestRequestsAreCopies(t *testing.T) {
	p := scripted.New([]scripted.Response{scripted.Say("a")}, nil)
	r := req(scripted.DefaultModel)
	r.Messages[0].ToolCalls = []bindings.ToolCall{{ID: "x", Arguments: []byte(`{}`)}}
	if _, err := p.Generate(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	r.Messages[0].Content = "changed"
	r.Messages[0].ToolCalls[0].Arguments[0] = '['
	got := p.Requests()
	if got[0].Messages[0].Content != "hi" || string(got[0].Messages[0].ToolCalls[0].Arguments) != "{}" {
		t.Errorf("recorded request changed with the caller's: %+v", got[0])
	}
	got[0].Messages[0].Content = "mine"
	if p.Requests()[0].Messages[0].Content != "hi" {
		t.Error("Requests returned the recorded request itself")
	}
}

func TestConcurrentCallsTakeEachResponseOnce(t *testing.T) {
	const n = 64
	script := make([]scripted.Response, n)
	for i := range script {
		script[i] = scripted.Say(fmt.Sprint(i))
	}
	p := scripted.New(script, nil)
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := p.Generate(context.Background(), req(scripted.DefaultModel))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			seen[r.Text]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d distinct responses for %d calls", len(seen), n)
	}
}

func TestLoop(t *testing.T) {
	p := scripted.New([]scripted.Response{scripted.Say("a"), scripted.Say("b")}, &scripted.Options{Loop: true, DiscardRequests: true})
	var got []string
	for range 5 {
		r, err := p.Generate(t.Context(), req(scripted.DefaultModel))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Text)
	}
	if diff := cmp.Diff([]string{"a", "b", "a", "b", "a"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(p.Requests()) != 0 {
		t.Error("DiscardRequests recorded requests")
	}
}
