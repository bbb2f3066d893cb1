package turn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
	"github.com/kindgi/agents/internal/journaltest"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// The racing resumers on memstore (the pgstore test races real processes):
// a run's driver dies with a model or tool call in flight (its store is
// gone from the call on: journaltest.Crasher.Kill), so its journal holds
// the step's started entry and nothing after it, and sixteen goroutines
// Resume it at once, each with bindings of its own (its own provider and
// tools, which record who called). The step runs at most once more, with
// the request id of the call in flight, and every resumer that lost calls
// nothing and fails run-busy. Over a plain memstore's basic bindings
// (journal.Adapt) each Resume takes the lease before it reads; over
// memstore's own journal.Driver it takes the lease with its first write,
// so the drive must take it before it sends the step again.

const racingGoroutines = 16

func TestRacingResumersOfAModelCallInFlight(t *testing.T) {
	for _, optimistic := range []bool{false, true} {
		t.Run(fmt.Sprintf("optimistic=%v", optimistic), func(t *testing.T) {
			testRacingResumers(t, optimistic, "model", "agent-loop/1/model-call")
		})
	}
}

func TestRacingResumersOfAToolCallInFlight(t *testing.T) {
	for _, optimistic := range []bool{false, true} {
		t.Run(fmt.Sprintf("optimistic=%v", optimistic), func(t *testing.T) {
			testRacingResumers(t, optimistic, "tool", "agent-loop/1/dispatch-tools/call_1")
		})
	}
}

func TestRacingResumersOfAQueryEmbeddingInFlight(t *testing.T) {
	for _, optimistic := range []bool{false, true} {
		t.Run(fmt.Sprintf("optimistic=%v", optimistic), func(t *testing.T) {
			testRacingResumers(t, optimistic, "embedding", turn.NodeRunRetrievals)
		})
	}
}

// testRacingResumers crashes a run in the call of kind under step key,
// then races the resumers. Kind "embedding" is semantic retrieval's query
// embedding, a call inside a decide step (no started entry): its result
// is stored with the user message's step or after it, so a resumer
// stores the user message first, and that write takes the lease before
// the query is embedded again.
func testRacingResumers(t *testing.T, optimistic bool, kind, key string) {
	ctx := t.Context()
	clock := newClock()
	mem := memstore.New(&memstore.Options{Now: clock.Now})
	var store racerStore = mem
	var asRead *asReadDriver
	if optimistic {
		asRead = &asReadDriver{Store: mem}
	}
	a := racingAgent(t)
	if kind == "embedding" {
		a = racingAgent(t, func(s *agent.Spec) {
			s.Retrieval = []agent.RetrievalIntent{{Types: []string{"acme.clause"}, Scope: agent.ScopeTenant, Mode: agent.ModeSemantic}}
		})
	}
	conv, err := mem.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, AgentID: a.ID, AgentVersion: a.Version})
	if err != nil {
		t.Fatal(err)
	}
	log := &racingLog{}

	// The first drive dies in the call of kind: its store is gone from
	// then on (journaltest.Crasher.Kill), so nothing after the started
	// entry is written — no result, no attempt, no lease released.
	const runID = "run-racing"
	crasher := journaltest.New(-1, false)
	crashed := racingBindings(t, mem, log, -1, kind, func(context.Context) { crasher.Kill() })
	crashed.Runs, crashed.Snapshots, crashed.Conversations, crashed.Hitl = crasher.Runs(mem), crasher.Snapshots(mem), crasher.Conversations(mem), crasher.Hitl(mem)
	crashed.Journal = nil // journal.Adapt of the crasher's bindings: the run is stored before the call
	crashed.LeaseTTL = time.Minute
	if _, err := turn.Invoke(ctx, turn.Input{TenantID: tenant, RunID: runID, Agent: a, ConversationID: conv.ID, UserMessage: "What is the answer?"}, crashed); err == nil {
		t.Fatal("the crashed drive completed")
	}
	journal, err := mem.ReadJournal(ctx, tenant, runID)
	if err != nil {
		t.Fatal(err)
	}
	var started, result bool
	for _, e := range journal {
		if strings.HasPrefix(e.Key, key) {
			started = started || e.Status == bindings.StepStarted
			result = result || e.Status != bindings.StepStarted
		}
	}
	// The embedding's crash comes before the drive's first write: its user
	// message waits for the next (deferMessage), and the run is stored
	// with nothing in its journal.
	if wantStarted := kind != "embedding"; started != wantStarted || result || (wantStarted && len(journal) == 0) {
		t.Fatalf("journal after the crash (%d entries): %s started %v, with a result or attempt %v; want the run stored, %s started %v and nothing else", len(journal), key, started, result, key, wantStarted)
	}
	var inFlight []racingCall
	for _, c := range log.calls() {
		if c.kind == kind {
			inFlight = append(inFlight, c)
		}
	}
	if len(inFlight) != 1 {
		t.Fatalf("%s calls of the crashed drive: %+v, want one", kind, inFlight)
	}
	crashedCalls := len(log.calls())

	clock.Advance(2 * time.Minute) // the dead driver's lease expires

	// The racers: each resumer's call takes a moment, so that all of them
	// read the run before the first call returns.
	gate := make(chan struct{})
	errs := make([]error, racingGoroutines)
	var wg sync.WaitGroup
	for i := range racingGoroutines {
		b := racingBindings(t, store, log, i, kind, func(context.Context) { time.Sleep(20 * time.Millisecond) })
		if asRead != nil {
			b.Journal = asRead // memstore's own Driver: the lease as read
		}
		wg.Go(func() {
			<-gate
			_, errs[i] = turn.Resume(ctx, turn.ResumeInput{TenantID: tenant, RunID: runID, Agent: a}, b)
		})
	}
	close(gate)
	wg.Wait()

	// Every resumer asks for the lease as read; those that open the run
	// once another took it fail run-busy at once.
	if asRead != nil && (asRead.reads.Load() == 0 || asRead.others.Load() != 0) {
		t.Fatalf("%d resumers read the run without its lease, %d opened it otherwise: the optimistic resume was not used", asRead.reads.Load(), asRead.others.Load())
	}
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case agents.CodeOf(err) != agents.CodeRunBusy:
			t.Errorf("resumer %d: %v, want completed or %s", i, err, agents.CodeRunBusy)
		}
	}
	if won == 0 {
		t.Fatalf("no resumer completed: %v", errs)
	}
	var again int
	for _, c := range log.calls()[crashedCalls:] {
		if errs[c.by] != nil {
			t.Errorf("resumer %d called %s (request %s), then failed: %v; a loser must call nothing", c.by, c.kind, c.requestID, errs[c.by])
		}
		if c.kind == kind {
			again++
			if c.requestID != inFlight[0].requestID {
				t.Errorf("the %s call ran again with request id %q, want %q", kind, c.requestID, inFlight[0].requestID)
			}
		}
	}
	if again > 1 {
		t.Errorf("the %s call in flight ran %d more times, want at most once", kind, again)
	}
	run, err := mem.GetRun(ctx, tenant, runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != bindings.RunCompleted {
		t.Errorf("run status %s, want completed", run.Status)
	}
}

// racingAgent is the lookup agent of the racing and stalled drives, as
// edit changes it.
func racingAgent(t *testing.T, edit ...func(*agent.Spec)) agent.Agent {
	t.Helper()
	spec := agent.Spec{
		ID: "acme.racing-agent", Version: "1.0.0", Name: "Racing", Instructions: "You look things up.",
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		Tools:        []agent.ToolRef{{ID: "acme.lookup", Version: "^1.0.0"}},
	}
	for _, e := range edit {
		e(&spec)
	}
	a, err := agent.Define(spec)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// racerStore is what the racing resumers bind as every store binding.
type racerStore interface {
	bindings.RunBinding
	bindings.RunSnapshotBinding
	bindings.ConversationBinding
	bindings.HitlBinding
	bindings.MemoryQueryBinding
}

// racingLog records the model and tool calls of every drive.
type racingLog struct {
	mu  sync.Mutex
	all []racingCall
}

type racingCall struct {
	kind, requestID string
	by              int // the resumer, -1 for the first drive
}

func (l *racingLog) record(kind, requestID string, by int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, racingCall{kind: kind, requestID: requestID, by: by})
}

func (l *racingLog) calls() []racingCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]racingCall(nil), l.all...)
}

// racingBindings are the bindings of drive by over store: a model that
// asks for the lookup tool (when kind is "tool" and it has no tool
// result yet), then answers, and the lookup tool. The call of kind runs
// wait; every call is logged.
func racingBindings(t *testing.T, store racerStore, log *racingLog, by int, kind string, wait func(context.Context)) turn.Bindings {
	t.Helper()
	tools := registry.NewTools()
	err := tools.Add(tenant, bindings.ToolDescriptor{ID: "acme.lookup", Version: "1.0.0", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ json.RawMessage, cc bindings.CallContext) (json.RawMessage, error) {
			log.record("tool", cc.RequestID, by)
			if kind == "tool" {
				wait(ctx)
			}
			return json.RawMessage(`{"answer":"42"}`), ctx.Err()
		})
	if err != nil {
		t.Fatal(err)
	}
	model := racingModel(func(ctx context.Context, req bindings.GenerateRequest) bindings.GenerateResponse {
		hasTool := false
		for _, m := range req.Messages {
			hasTool = hasTool || m.Role == bindings.ChatTool
		}
		log.record("model", req.RequestID, by)
		if kind == "tool" && !hasTool {
			return bindings.GenerateResponse{ToolCalls: []bindings.ToolCall{{ID: "call_1", Name: "acme.lookup", Arguments: json.RawMessage(`{"q":"answer"}`)}}}
		}
		if kind == "model" {
			wait(ctx)
		}
		return bindings.GenerateResponse{Text: "The answer is 42."}
	})
	return turn.Bindings{
		Providers: bindings.Providers{model}, Tools: tools, Memory: store,
		Conversations: store, Snapshots: store, Runs: store, Hitl: store,
		Embeddings: racingEmbeddings{log: log, by: by, wait: wait, kind: kind}, EmbeddingModel: "hash",
	}
}

// racingEmbeddings embeds as memstore.HashEmbeddings does, logging each
// call (with the model as its request id: an embedding has none) and
// running wait when kind is "embedding".
type racingEmbeddings struct {
	log  *racingLog
	by   int
	wait func(context.Context)
	kind string
}

func (e racingEmbeddings) Embed(ctx context.Context, model string, texts []string) ([][]float32, error) {
	e.log.record("embedding", model, e.by)
	if e.kind == "embedding" {
		e.wait(ctx)
	}
	return memstore.HashEmbeddings{}.Embed(ctx, model, texts)
}

// racingModel is a provider whose answers the function makes.
type racingModel func(context.Context, bindings.GenerateRequest) bindings.GenerateResponse

func (racingModel) ID() string { return "racing" }

func (racingModel) Models() []bindings.ModelInfo {
	return []bindings.ModelInfo{{ID: "racing-1", Features: []string{"tool-use"}}}
}

func (m racingModel) Generate(ctx context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	if strings.TrimSpace(req.RequestID) == "" {
		return bindings.GenerateResponse{}, fmt.Errorf("model call without a request id")
	}
	res := m(ctx, req)
	return res, ctx.Err() // the first drive's call ends with its drive
}

// asReadDriver is memstore's journal.Driver, counting the Opens that
// read the run without leasing it (a pending lease as read) and those
// that did not ask to (others).
type asReadDriver struct {
	*memstore.Store
	reads, others atomic.Int32
}

func (d *asReadDriver) Open(ctx context.Context, in journal.OpenInput) (journal.Drive, error) {
	if in.Lease != journal.LeaseOnWrite {
		d.others.Add(1)
	}
	dr, err := d.Store.Open(ctx, in)
	if err == nil && dr.Pending != nil && dr.Pending.AsRead != nil {
		d.reads.Add(1)
	}
	return dr, err
}
