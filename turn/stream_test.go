package turn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/providers/anthropic"
	"github.com/kindgi/agents/providers/openai"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// providerFixture reads a fixture of a provider package.
func providerFixture(t testing.TB, provider, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "providers", provider, "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wireAPI is a local server speaking one API. It answers from the
// provider's fixtures: the two parallel clause searches first, then (once
// the request carries tool results) the text answer; streamed when the
// request asks for it. It records the requests.
type wireAPI struct {
	t        testing.TB
	api      string // "openai" or "anthropic"
	mu       sync.Mutex
	requests []map[string]any
	// hook, when set, serves the request instead.
	hook func(n int, req map[string]any, w http.ResponseWriter, r *http.Request) bool
}

func (a *wireAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	a.requests = append(a.requests, req)
	n := len(a.requests)
	a.mu.Unlock()
	if a.hook != nil && a.hook(n, req, w, r) {
		return
	}
	stream := req["stream"] == true
	toolResults := strings.Contains(string(body), `"role":"tool"`) || strings.Contains(string(body), `"tool_result"`)
	var name string
	switch {
	case a.api == "openai" && stream && toolResults:
		name = "stream_text.sse"
	case a.api == "openai" && stream:
		name = "stream_parallel_tool_calls.sse"
	case a.api == "openai" && toolResults:
		name = "final_text.json"
	case a.api == "openai":
		name = "parallel_tool_calls.json"
	case stream && toolResults:
		name = "stream_text.sse"
	case stream:
		name = "stream_tool_use.sse"
	case toolResults:
		name = "message_text.json"
	default:
		name = "message_tool_use.json"
	}
	serveBody(w, stream, providerFixture(a.t, a.api, name))
}

func serveBody(w http.ResponseWriter, stream bool, body []byte) {
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.Write(body)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func (a *wireAPI) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.requests)
}

// newWireProvider starts a local server for api and returns a provider
// talking to it.
func newWireProvider(t testing.TB, api *wireAPI) bindings.StreamingProvider {
	t.Helper()
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	if api.api == "openai" {
		return openai.New(&openai.Options{BaseURL: srv.URL + "/v1", APIKey: "sk-test", MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond})
	}
	return anthropic.New(&anthropic.Options{BaseURL: srv.URL, APIKey: "sk-ant-test", MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond})
}

// plain hides a provider's GenerateStream: the turn calls Generate.
type plain struct{ bindings.Provider }

// streamTurn runs the fixture's turn (two parallel clause searches, then
// the answer) over p with run id runID and returns the fixture.
func streamTurn(t *testing.T, p bindings.Provider, runID string) (*fixture, turn.Result, error) {
	t.Helper()
	f := newFixture(t, nil, nil)
	b := f.bindings()
	b.Providers = bindings.Providers{p}
	in := f.input("Draft an NDA for Globex.")
	in.RunID = runID
	res, err := turn.Invoke(t.Context(), in, b)
	return f, res, err
}

func TestStreamingJournalsWhatGenerateJournals(t *testing.T) {
	for _, api := range []string{"openai", "anthropic"} {
		t.Run(api, func(t *testing.T) {
			sp := newWireProvider(t, &wireAPI{t: t, api: api})
			fs, streamed, err := streamTurn(t, sp, "run-stream")
			if err != nil {
				t.Fatal(err)
			}
			fg, generated, err := streamTurn(t, plain{newWireProvider(t, &wireAPI{t: t, api: api})}, "run-stream")
			if err != nil {
				t.Fatal(err)
			}
			if streamed.Response.Content != generated.Response.Content || streamed.Response.Content == "" {
				t.Errorf("content %q streamed, %q generated", streamed.Response.Content, generated.Response.Content)
			}
			js, jg := fs.journal("run-stream"), fg.journal("run-stream")
			if len(js) != len(jg) {
				t.Fatalf("journal lengths: %d streamed, %d generated", len(js), len(jg))
			}
			modelCalls := 0
			for i := range js {
				s, g := js[i], jg[i]
				if s.Key != g.Key || s.Status != g.Status || !bytes.Equal(s.Output, g.Output) {
					t.Errorf("entry %d differs:\nstreamed  %s %s %s\ngenerated %s %s %s", i, s.Key, s.Status, s.Output, g.Key, g.Status, g.Output)
				}
				if s.Node == turn.NodeModelCall && s.Status == bindings.StepCompleted && strings.HasSuffix(s.Key, "/model-call") {
					modelCalls++
				}
			}
			if modelCalls != 2 {
				t.Errorf("%d completed model calls journaled, want 2", modelCalls)
			}
			checkDeltaOrder(t, fs.events.events, streamed.Response.Content)
			for _, e := range fg.events.events {
				if e.Kind() == turn.KindModelCallDelta {
					t.Fatal("a turn over Generate emitted a delta")
				}
			}
		})
	}
}

// checkDeltaOrder checks that every delta comes between its call's
// model.call.started and model.call.completed, and that the text deltas of
// the last call spell the answer.
func checkDeltaOrder(t *testing.T, events []turn.Event, answer string) {
	t.Helper()
	open := 0
	texts := map[int]string{}
	deltas := 0
	for _, e := range events {
		switch e := e.(type) {
		case turn.ModelCallStartedEvent:
			open = e.Iteration
		case turn.ModelCallDeltaEvent:
			deltas++
			if e.Iteration != open {
				t.Fatalf("delta of iteration %d outside its call (open %d)", e.Iteration, open)
			}
			texts[e.Iteration] += e.Delta.Text
		case turn.ModelCallCompletedEvent:
			if e.Iteration != open {
				t.Fatalf("completed %d while %d open", e.Iteration, open)
			}
			open = 0
		}
	}
	if deltas == 0 {
		t.Fatal("no delta events")
	}
	if texts[2] != answer {
		t.Errorf("the deltas of the answer spell %q, want %q", texts[2], answer)
	}
}

// crashOnDelta panics (a driver dying) after n deltas of its first stream.
type crashOnDelta struct {
	bindings.StreamingProvider
	n          int
	mu         sync.Mutex
	streams    int
	requestIDs []string
}

type driverDied struct{}

func (c *crashOnDelta) GenerateStream(ctx context.Context, req bindings.GenerateRequest, onDelta func(bindings.Delta)) (bindings.GenerateResponse, error) {
	c.mu.Lock()
	c.streams++
	first := c.streams == 1
	c.requestIDs = append(c.requestIDs, req.RequestID)
	c.mu.Unlock()
	seen := 0
	return c.StreamingProvider.GenerateStream(ctx, req, func(d bindings.Delta) {
		onDelta(d)
		if seen++; first && seen == c.n {
			panic(driverDied{})
		}
	})
}

func TestResumeAfterACrashMidStreamStreamsAgain(t *testing.T) {
	for _, api := range []string{"openai", "anthropic"} {
		t.Run(api, func(t *testing.T) {
			cp := &crashOnDelta{StreamingProvider: newWireProvider(t, &wireAPI{t: t, api: api}), n: 2}
			f := newFixture(t, nil, nil)
			b := f.bindings()
			b.Providers = bindings.Providers{cp}
			in := f.input("Draft an NDA for Globex.")
			in.RunID = "run-crash-stream"
			func() {
				defer func() {
					if p := recover(); p == nil {
						t.Fatal("the provider did not crash the driver")
					} else if _, ok := p.(driverDied); !ok {
						panic(p)
					}
				}()
				_, _ = turn.Invoke(t.Context(), in, b)
			}()
			// The dead driver left the model call started, and at most the
			// record of its failed attempt (the attempts backstop), with
			// nothing of the stream: no output.
			for _, e := range f.journal(in.RunID) {
				if strings.Contains(e.Key, "/attempt/") && e.Status == bindings.StepFailed && len(e.Output) == 0 {
					continue
				}
				if strings.HasPrefix(e.Key, "agent-loop/") && e.Status != bindings.StepStarted {
					t.Errorf("after the crash the journal holds %s %s %s", e.Key, e.Status, e.Output)
				}
			}
			if n := len(f.messages()); n != 1 {
				t.Errorf("%d messages stored after the crash, want the user message alone", n)
			}
			f.events.reset()
			f.clock.Advance(10 * time.Minute) // the dead driver's lease expires
			res, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: in.RunID, Agent: f.agent}, b)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != turn.StatusCompleted {
				t.Fatalf("status %s", res.Status)
			}
			if len(cp.requestIDs) < 2 || cp.requestIDs[0] != cp.requestIDs[1] || cp.requestIDs[0] != in.RunID+"/agent-loop/1/model-call" {
				t.Errorf("request ids %v: the resumed call must reuse the crashed one's", cp.requestIDs)
			}
			// The resumed drive streamed the call again.
			var resumedDeltas int
			for _, e := range f.events.events {
				if d, ok := e.(turn.ModelCallDeltaEvent); ok && d.Iteration == 1 {
					resumedDeltas++
				}
			}
			if resumedDeltas == 0 {
				t.Error("the resumed drive emitted no delta for the crashed call")
			}
			// The journal holds exactly one result for the call, the whole
			// response, as a turn without a crash journals it.
			_, clean, err := streamTurn(t, plain{newWireProvider(t, &wireAPI{t: t, api: api})}, "run-crash-stream")
			if err != nil {
				t.Fatal(err)
			}
			if clean.Response.Content != res.Response.Content {
				t.Errorf("content %q, want %q", res.Response.Content, clean.Response.Content)
			}
			results := 0
			for _, e := range f.journal(in.RunID) {
				if e.Key == "agent-loop/1/model-call" && e.Status == bindings.StepCompleted {
					results++
					var resp bindings.GenerateResponse
					if err := json.Unmarshal(e.Output, &resp); err != nil || len(resp.ToolCalls) != 2 {
						t.Errorf("journaled response %s", e.Output)
					}
				}
			}
			if results != 1 {
				t.Errorf("%d results for the crashed call", results)
			}
		})
	}
}

func TestCancelMidStreamAbortsTheTurn(t *testing.T) {
	for _, api := range []string{"openai", "anthropic"} {
		t.Run(api, func(t *testing.T) {
			closed := make(chan struct{})
			wa := &wireAPI{t: t, api: api}
			wa.hook = func(_ int, req map[string]any, w http.ResponseWriter, r *http.Request) bool {
				name := "stream_parallel_tool_calls.sse"
				if api == "anthropic" {
					name = "stream_tool_use.sse"
				}
				blocks := strings.SplitAfter(string(providerFixture(t, api, name)), "\n\n")
				serveBody(w, true, []byte(strings.Join(blocks[:3], "")))
				select {
				case <-r.Context().Done():
					close(closed)
				case <-time.After(10 * time.Second):
				}
				return true
			}
			f := newFixture(t, nil, nil)
			b := f.bindings()
			b.Providers = bindings.Providers{newWireProvider(t, wa)}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			b.OnEvent = func(_ context.Context, e turn.Event) {
				if e.Kind() == turn.KindModelCallDelta {
					cancel()
				}
			}
			start := time.Now()
			_, err := turn.Invoke(ctx, f.input("Draft an NDA."), b)
			var ta *agents.TurnAbortedError
			if !errors.As(err, &ta) || ta.Reason != agents.AbortExternal {
				t.Fatalf("err = %v, want turn-aborted external", err)
			}
			select {
			case <-closed:
			case <-time.After(3 * time.Second):
				t.Fatal("the server never saw the connection close")
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the turn took %v to stop", d)
			}
			if wa.count() != 1 {
				t.Errorf("requests = %d, want 1", wa.count())
			}
		})
	}
}

// flakyStream fails its first stream after one delta.
type flakyStream struct {
	mu      sync.Mutex
	streams int
	ids     []string
}

func (*flakyStream) ID() string { return "flaky" }
func (*flakyStream) Models() []bindings.ModelInfo {
	return []bindings.ModelInfo{{ID: "flaky-1", Features: []string{"tool-use", "streaming"}}}
}
func (*flakyStream) Generate(context.Context, bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	return bindings.GenerateResponse{}, errors.New("not used")
}
func (p *flakyStream) GenerateStream(_ context.Context, req bindings.GenerateRequest, onDelta func(bindings.Delta)) (bindings.GenerateResponse, error) {
	p.mu.Lock()
	p.streams++
	n := p.streams
	p.ids = append(p.ids, req.RequestID)
	p.mu.Unlock()
	onDelta(bindings.Delta{Text: "Clause "})
	if n == 1 {
		return bindings.GenerateResponse{}, &agents.ModelInvocationError{Provider: "flaky", Model: req.Model, Message: "connection reset"}
	}
	onDelta(bindings.Delta{Text: "C-7 fits."})
	return bindings.GenerateResponse{Text: "Clause C-7 fits.", FinishReason: "stop"}, nil
}

func TestAStreamCutPartWayIsSentAgain(t *testing.T) {
	f := newFixture(t, nil, nil)
	b := f.bindings()
	p := &flakyStream{}
	b.Providers = bindings.Providers{p}
	in := f.input("Which clause?")
	res, err := turn.Invoke(t.Context(), in, b)
	if err != nil {
		t.Fatal(err)
	}
	if res.Response.Content != "Clause C-7 fits." || p.streams != 2 || p.ids[0] != p.ids[1] {
		t.Fatalf("content %q streams %d ids %v", res.Response.Content, p.streams, p.ids)
	}
	var kinds []string
	for _, e := range f.events.events {
		switch e := e.(type) {
		case turn.ModelCallStartedEvent:
			kinds = append(kinds, fmt.Sprintf("started/%d", e.Attempt))
		case turn.ModelCallDeltaEvent:
			kinds = append(kinds, "delta:"+e.Delta.Text)
		case turn.ModelCallCompletedEvent:
			kinds = append(kinds, "completed")
		}
	}
	want := "started/0 delta:Clause  started/2 delta:Clause  delta:C-7 fits. completed"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	for _, e := range f.journal(res.RunID) {
		if strings.Contains(string(e.Output), "connection reset") {
			t.Errorf("the failed attempt reached the journal: %s %s", e.Key, e.Output)
		}
	}
}

func TestEventsYieldsTheTurnAndItsResult(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), nil)
	b := f.bindings()
	b.OnEvent = nil
	var kinds []string
	var last turn.Event
	for e, err := range turn.Events(t.Context(), f.input("Find a confidentiality clause."), b) {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, e.Kind())
		last = e
	}
	done, ok := last.(turn.TurnCompletedEvent)
	if !ok || done.Result == nil {
		t.Fatalf("last event %#v, want turn.completed with its result", last)
	}
	if done.Result.Status != turn.StatusCompleted || done.Result.Response.Content != "Clause C-7 fits: three years of confidentiality." {
		t.Errorf("result %+v", done.Result)
	}
	if kinds[0] != turn.KindTurnStarted {
		t.Errorf("first event %s", kinds[0])
	}
	if raw, _ := json.Marshal(done); strings.Contains(string(raw), "appended") {
		t.Errorf("the result leaked into the event's JSON: %s", raw)
	}
}

func TestEventsYieldsTheError(t *testing.T) {
	f := newFixture(t, nil, nil)
	in := f.input("")
	var errs []error
	for e, err := range turn.Events(t.Context(), in, f.bindings()) {
		if e != nil {
			t.Errorf("event %s before the input was accepted", e.Kind())
		}
		errs = append(errs, err)
	}
	if len(errs) != 1 || agents.CodeOf(errs[0]) != agents.CodeInvalidMessage {
		t.Errorf("errors %v", errs)
	}
}

// leaveEventsAtModelCall runs a turn through turn.Events and leaves the
// loop at the first model call — with a break, or with a panic (which it
// recovers) when panics is set — then returns the outcome the run
// stored, as an Invoke with its run id reads it.
func leaveEventsAtModelCall(t *testing.T, runID string, panics bool) error {
	t.Helper()
	f := newFixture(t, searchThenAnswer(), nil)
	b := f.bindings()
	b.OnEvent = nil
	in := f.input("Find a confidentiality clause.")
	in.RunID = runID
	func() {
		if panics {
			defer func() { _ = recover() }()
		}
		for e := range turn.Events(t.Context(), in, b) {
			if e.Kind() == turn.KindModelCallStarted {
				if panics {
					panic("host bug")
				}
				break
			}
		}
	}()
	_, err := turn.Invoke(t.Context(), in, b)
	return err
}

func TestLeavingEventsEarlyCancelsTheTurn(t *testing.T) {
	// The loop returned only once the turn stopped: its outcome is stored.
	err := leaveEventsAtModelCall(t, "run-left", false)
	var ta *agents.TurnAbortedError
	if !errors.As(err, &ta) || ta.Reason != agents.AbortExternal {
		t.Errorf("the run's outcome is %v, want turn-aborted external", err)
	}
}

func TestModelSettingsReachTheRequest(t *testing.T) {
	temp, maxTok, seed, topP := 0.2, 512, int64(42), 0.5
	f := newFixture(t, []scripted.Response{scripted.Say("Done.")}, func(s *agent.Spec) {
		s.ModelSettings = &bindings.ModelSettings{Temperature: &temp, MaxOutputTokens: &maxTok, Stop: []string{"END"}}
	})
	in := f.input("Hello.")
	override := 0.9
	in.ModelSettings = bindings.ModelSettings{Temperature: &override, Seed: &seed, TopP: &topP}
	if _, err := turn.Invoke(t.Context(), in, f.bindings()); err != nil {
		t.Fatal(err)
	}
	got := f.provider.Requests()[0].Settings
	if *got.Temperature != 0.9 || *got.MaxOutputTokens != 512 || *got.Seed != 42 || *got.TopP != 0.5 || len(got.Stop) != 1 {
		t.Errorf("settings %+v: want the agent's overridden field by field by the turn's", got)
	}
	if f.provider.Requests()[0].Output != nil {
		t.Error("an agent without output sent a schema")
	}

	bad := 3.0
	in.ModelSettings = bindings.ModelSettings{Temperature: &bad}
	_, err := turn.Invoke(t.Context(), in, f.bindings())
	if agents.CodeOf(err) != agents.CodeInvalidMessage || !strings.Contains(err.Error(), "modelSettings.temperature") {
		t.Errorf("err = %v, want invalid-message naming modelSettings.temperature", err)
	}
}

func TestAnAgentWithoutTheNewFieldsSendsNone(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), nil)
	if _, err := turn.Invoke(t.Context(), f.input("Find a clause."), f.bindings()); err != nil {
		t.Fatal(err)
	}
	for _, r := range f.provider.Requests() {
		if !r.Settings.IsZero() || r.Output != nil {
			t.Errorf("request carries settings %+v output %s", r.Settings, r.Output)
		}
	}
	raw, _ := json.Marshal(f.agent)
	if strings.Contains(string(raw), "modelSettings") || strings.Contains(string(raw), `"output"`) {
		t.Errorf("agent JSON %s", raw)
	}
}

func TestAPanicInTheEventsLoopStopsTheTurn(t *testing.T) {
	// Events waited for the turn to stop before the panic went on.
	err := leaveEventsAtModelCall(t, "run-panic", true)
	if agents.CodeOf(err) != agents.CodeTurnAborted {
		t.Errorf("the run's outcome is %v, want turn-aborted", err)
	}
}

func TestTurnSettingsSurviveAPark(t *testing.T) {
	f := newFixture(t, emailThenAnswer(), nil)
	in := f.input("Send the draft to Globex.")
	temp := 0.1
	in.ModelSettings = bindings.ModelSettings{Temperature: &temp}
	res, err := turn.Invoke(t.Context(), in, f.bindings())
	if err != nil || res.Status != turn.StatusSuspended {
		t.Fatalf("%+v, %v", res.Status, err)
	}
	f.decide(res.Approvals, true)
	if _, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, f.bindings()); err != nil {
		t.Fatal(err)
	}
	reqs := f.provider.Requests()
	if len(reqs) != 2 || reqs[1].Settings.Temperature == nil || *reqs[1].Settings.Temperature != 0.1 {
		t.Errorf("the resumed call's settings: %+v", reqs[len(reqs)-1].Settings)
	}
}
