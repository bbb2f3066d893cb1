package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// planProvider answers from the conversation it is sent, so that turns of
// many runs may interleave: it calls the plan's tools one per response,
// in order, then answers "done".
type planProvider struct {
	plan  []string // tool ids
	args  map[string]any
	calls atomic.Int64
}

func (p *planProvider) ID() string { return scripted.DefaultID }
func (p *planProvider) Models() []bindings.ModelInfo {
	return []bindings.ModelInfo{{ID: scripted.DefaultModel, Features: []string{"tool-use", "json-mode"}, ContextWindow: 128000}}
}

func (p *planProvider) Generate(ctx context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	p.calls.Add(1)
	n := 0
	for _, m := range req.Messages {
		if m.Role == bindings.ChatTool {
			n++
		}
	}
	if n < len(p.plan) {
		args, _ := json.Marshal(p.args[p.plan[n]])
		return bindings.GenerateResponse{Model: scripted.DefaultModel, FinishReason: "tool_calls",
			ToolCalls: []bindings.ToolCall{{ID: fmt.Sprintf("call_%d", n+1), Name: p.plan[n], Arguments: args}}}, nil
	}
	return bindings.GenerateResponse{Model: scripted.DefaultModel, Text: "done", FinishReason: "stop"}, nil
}

var planArgs = map[string]any{
	"acme.clause-search": map[string]any{"query": "confidentiality"},
	"acme.send-email":    map[string]any{"to": "legal@globex.test", "subject": "NDA", "body": "Draft attached."},
}

// workerFixture is the turn fixture with a plan provider, an agent lookup
// and a conversation per run.
func workerFixture(t *testing.T, plan ...string) (*fixture, turn.Bindings) {
	t.Helper()
	f := newFixture(t, nil, nil)
	f.clock.useWall() // leases lapse and waits end on the wall clock
	b := f.bindings()
	b.Providers = bindings.Providers{&planProvider{plan: plan, args: planArgs}}
	b.OnEvent = nil
	b.Agents = func(_ context.Context, _, id, version string) (agent.Agent, error) {
		if id != f.agent.ID || version != f.agent.Version {
			return agent.Agent{}, &agents.AgentNotFoundError{ID: id, Version: version}
		}
		return f.agent, nil
	}
	return f, b
}

// conversation opens conversation id for the fixture's agent.
func (f *fixture) conversation(id string) {
	f.t.Helper()
	if _, err := f.store.OpenConversation(context.Background(), bindings.OpenConversationInput{
		TenantID: tenant, ProjectID: project, ID: id, AgentID: f.agent.ID, AgentVersion: f.agent.Version,
	}); err != nil {
		f.t.Fatalf("OpenConversation: %v", err)
	}
}

// startWorker runs a worker until the test ends (or stop is called) and
// returns stop, which waits for Run to return and reports its error.
func startWorker(t *testing.T, b turn.Bindings, opts turn.WorkerOptions) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- turn.NewWorker(b, opts).Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				err = errors.New("Run did not return within 30s of its context's end")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// workUntil runs a Worker with opts over b until done holds (polled every
// 5ms), failing with what stuck says when 10s pass first, then stops it:
// Run must return nil.
func workUntil(t *testing.T, b turn.Bindings, opts turn.WorkerOptions, done func() bool, stuck func() string) {
	t.Helper()
	stop := startWorker(t, b, opts)
	deadline := time.Now().Add(10 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatal(stuck())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Fatalf("worker: %v", err)
	}
}

func waitFor(t *testing.T, b turn.Bindings, runID string, d time.Duration) (turn.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return turn.Wait(ctx, b, tenant, runID)
}

// toolsWith is the fixture's tool catalog with clause-search handled by h.
func toolsWith(t *testing.T, h bindings.ToolHandler) *registry.Tools {
	t.Helper()
	tools := registry.NewTools()
	for _, d := range []struct {
		desc bindings.ToolDescriptor
		h    bindings.ToolHandler
	}{
		{bindings.ToolDescriptor{ID: "acme.clause-search", Version: "1.2.0", InputSchema: clauseSchema}, h},
		{bindings.ToolDescriptor{ID: "acme.send-email", Version: "2.1.3", InputSchema: emailSchema}, func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
			return json.RawMessage(`{"sent":true}`), nil
		}},
	} {
		if err := tools.Add(tenant, d.desc, d.h); err != nil {
			t.Fatal(err)
		}
	}
	return tools
}

// TestWorkersFinishSubmittedRuns submits turns before any worker runs,
// then starts two workers: every run completes once, each tool call runs
// once, and each conversation gets one user and one final message.
func TestWorkersFinishSubmittedRuns(t *testing.T) {
	f, b := workerFixture(t, "acme.clause-search")
	const n = 12
	ids := make([]string, n)
	for i := range n {
		conv := fmt.Sprintf("conv-w%d", i)
		f.conversation(conv)
		in := f.input("Find a confidentiality clause.")
		in.ConversationID = conv
		id, err := turn.Submit(context.Background(), in, b)
		if err != nil {
			t.Fatalf("Submit: %v", err)
		}
		if r, err := f.store.GetRun(context.Background(), tenant, id); err != nil || r.Status != bindings.RunQueued || r.LeaseOwner != "" {
			t.Fatalf("submitted run = %+v, %v; want queued without a lease", r, err)
		}
		ids[i] = id
	}
	if got := f.log.total(); got != 0 {
		t.Fatalf("Submit called %d tools, want none", got)
	}
	var mu sync.Mutex
	outcomes := map[string]int{}
	onRun := func(r bindings.Run, res turn.Result, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err == nil && res.Status == turn.StatusCompleted {
			outcomes[r.ID]++
		}
	}
	stop1 := startWorker(t, b, turn.WorkerOptions{MaxConcurrent: 3, OnRun: onRun})
	stop2 := startWorker(t, b, turn.WorkerOptions{MaxConcurrent: 3, OnRun: onRun})
	for i, id := range ids {
		res, err := waitFor(t, b, id, 10*time.Second)
		if err != nil || res.Status != turn.StatusCompleted || res.Response.Content != "done" {
			t.Fatalf("Wait(%s) = %+v, %v; want completed with done", id, res, err)
		}
		if res.ConversationID != fmt.Sprintf("conv-w%d", i) || res.Usage.ToolCalls != 1 {
			t.Fatalf("Wait(%s) = conversation %s, %d tool calls", id, res.ConversationID, res.Usage.ToolCalls)
		}
	}
	if err := stop1(); err != nil {
		t.Fatal(err)
	}
	if err := stop2(); err != nil {
		t.Fatal(err)
	}
	if got := f.log.count("acme.clause-search"); got != n {
		t.Errorf("clause-search ran %d times, want %d", got, n)
	}
	for _, id := range ids {
		if outcomes[id] != 1 {
			t.Errorf("run %s completed %d times by the workers, want once", id, outcomes[id])
		}
	}
	for i := range n {
		ms, err := f.store.ReadMessages(context.Background(), bindings.ReadMessagesInput{TenantID: tenant, ConversationID: fmt.Sprintf("conv-w%d", i), Limit: -1})
		if err != nil {
			t.Fatal(err)
		}
		var roles []string
		for _, m := range ms {
			roles = append(roles, string(m.Role))
		}
		if got := strings.Join(roles, ","); got != "user,agent,tool,agent" {
			t.Errorf("conversation %d messages %s, want user,agent,tool,agent", i, got)
		}
	}
}

// TestSubmitChecksBeforeAnySideEffect: what Invoke refuses, Submit refuses
// without storing a run.
func TestSubmitChecksBeforeAnySideEffect(t *testing.T) {
	f, b := workerFixture(t)
	bad := []func(*turn.Input, *turn.Bindings){
		func(in *turn.Input, _ *turn.Bindings) { in.UserMessage = " " },
		func(in *turn.Input, _ *turn.Bindings) { in.TenantID = "" },
		func(in *turn.Input, _ *turn.Bindings) { in.Agent = agent.Agent{} },
		func(in *turn.Input, _ *turn.Bindings) { in.Parameters = map[string]any{"f": func() {}} },
		func(_ *turn.Input, b *turn.Bindings) { b.Runs = nil },
		func(_ *turn.Input, b *turn.Bindings) { b.Memory = nil }, // the agent has retrieval intents
	}
	for i, edit := range bad {
		in, bb := f.input("hi"), b
		edit(&in, &bb)
		_, ierr := turn.Invoke(context.Background(), in, bb)
		_, serr := turn.Submit(context.Background(), in, bb)
		if serr == nil || agents.CodeOf(serr) != agents.CodeOf(ierr) {
			t.Errorf("case %d: Submit error %v (%s), Invoke's %v (%s)", i, serr, agents.CodeOf(serr), ierr, agents.CodeOf(ierr))
		}
	}
	page, err := f.store.ListRuns(context.Background(), bindings.ListRunsInput{TenantID: tenant})
	if err != nil || len(page.Runs) != 0 {
		t.Fatalf("runs after refused submits: %v, %v", page.Runs, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := turn.Submit(ctx, f.input("hi"), b); agents.CodeOf(err) != agents.CodeTurnAborted {
		t.Fatalf("Submit with a cancelled context: %v", err)
	}
	// A retried Submit with the same run id changes nothing.
	in := f.input("hi")
	in.RunID = "run-fixed"
	for range 2 {
		if id, err := turn.Submit(context.Background(), in, b); err != nil || id != "run-fixed" {
			t.Fatalf("Submit with a run id = %q, %v", id, err)
		}
	}
	other := in
	other.Agent.Version = "9.9.9"
	if _, err := turn.Submit(context.Background(), other, b); agents.CodeOf(err) != agents.CodeRunInputMismatch {
		t.Fatalf("Submit of an existing run with another agent version: %v, want run-input-mismatch (as Invoke)", err)
	}
	other = in
	other.UserMessage = "something else"
	_, ierr := turn.Invoke(context.Background(), other, b)
	if _, err := turn.Submit(context.Background(), other, b); agents.CodeOf(err) != agents.CodeRunInputMismatch || agents.CodeOf(ierr) != agents.CodeRunInputMismatch {
		t.Fatalf("Submit and Invoke of an existing run with another message: %v, %v; want run-input-mismatch", err, ierr)
	}
}

// TestWaitReturnsWhatInvokeReturned compares Wait with the Invoke that
// drove the run: completed, parked and failed alike.
func TestWaitReturnsWhatInvokeReturned(t *testing.T) {
	f := newFixture(t, append(searchThenAnswer(), emailThenAnswer()[0]), nil)
	b := f.bindings()
	res, err := turn.Invoke(context.Background(), f.input("Find a clause."), b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := waitFor(t, b, res.RunID, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(res, got); d != "" {
		t.Errorf("Wait of a completed run (-invoke +wait):\n%s", d)
	}
	parked, err := turn.Invoke(context.Background(), f.input("Send it."), b)
	if err != nil || parked.Status != turn.StatusSuspended {
		t.Fatalf("Invoke = %+v, %v; want suspended", parked, err)
	}
	got, err = waitFor(t, b, parked.RunID, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(parked, got); d != "" {
		t.Errorf("Wait of a parked run (-invoke +wait):\n%s", d)
	}
	// Decided, the run is no longer parked: Wait waits for a driver.
	f.decide(parked.Approvals, true)
	if _, err := waitFor(t, b, parked.RunID, 150*time.Millisecond); agents.CodeOf(err) != agents.CodeTurnAborted {
		t.Fatalf("Wait of a decided parked run nobody drives: %v, want turn-aborted when its context ends", err)
	}
	// A failed run: Wait returns the recorded error.
	f.provider.Append(scripted.Response{Err: errors.New("model down")})
	_, ierr := turn.Invoke(context.Background(), f.input("Again."), b)
	if ierr == nil {
		t.Fatal("Invoke with a failing model succeeded")
	}
	runs, _ := f.store.ListRuns(context.Background(), bindings.ListRunsInput{TenantID: tenant, Statuses: []bindings.RunStatus{bindings.RunFailed}})
	if len(runs.Runs) != 1 {
		t.Fatalf("failed runs %v", runs.Runs)
	}
	_, werr := waitFor(t, b, runs.Runs[0].ID, 5*time.Second)
	if agents.CodeOf(werr) != agents.CodeOf(ierr) || werr.Error() != ierr.Error() {
		t.Errorf("Wait of a failed run = %v, Invoke returned %v", werr, ierr)
	}
	if _, err := waitFor(t, b, "no-such-run", time.Second); agents.CodeOf(err) != agents.CodeRunJournalUnavailable {
		t.Errorf("Wait of an unknown run: %v", err)
	}
}

// TestDecidedApprovalIsContinuedByAWorker: a submitted turn parks on a
// gated tool; deciding the approval is all the host does: a worker
// continues the run, with no Resume call.
func TestDecidedApprovalIsContinuedByAWorker(t *testing.T) {
	f, b := workerFixture(t, "acme.send-email")
	startWorker(t, b, turn.WorkerOptions{})
	id, err := turn.Submit(context.Background(), f.input("Send the draft."), b)
	if err != nil {
		t.Fatal(err)
	}
	res, err := waitFor(t, b, id, 5*time.Second)
	if err != nil || res.Status != turn.StatusSuspended || len(res.Approvals) != 1 {
		t.Fatalf("Wait = %+v, %v; want suspended on one approval", res, err)
	}
	if f.log.count("acme.send-email") != 0 {
		t.Fatal("the gated tool ran before its approval")
	}
	start := time.Now()
	f.decide(res.Approvals, true)
	res, err = waitFor(t, b, id, 5*time.Second)
	if err != nil || res.Status != turn.StatusCompleted {
		t.Fatalf("Wait after the decision = %+v, %v; want completed", res, err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("the decided run completed %v after the decision, want within 1s", el)
	}
	if got := f.log.count("acme.send-email"); got != 1 {
		t.Errorf("send-email ran %d times, want once", got)
	}
}

// TestStoppedWorkerLeavesItsRunsClaimable stops a worker in the middle of
// a tool call: the drive is cancelled after the grace, nothing final is
// journaled, the lease is released, Run returns with no goroutine left,
// and a second worker finishes the run long before the lease TTL.
func TestStoppedWorkerLeavesItsRunsClaimable(t *testing.T) {
	f, b := workerFixture(t, "acme.clause-search")
	b.LeaseTTL = time.Minute
	entered := make(chan struct{}, 1)
	var block atomic.Bool
	block.Store(true)
	b.Tools = toolsWith(t, func(ctx context.Context, _ json.RawMessage, _ bindings.CallContext) (json.RawMessage, error) {
		if block.Load() {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return json.RawMessage(`{"clauses":[]}`), nil
	})
	before := runtime.NumGoroutine()
	stop := startWorker(t, b, turn.WorkerOptions{StopGrace: 100 * time.Millisecond})
	id, err := turn.Submit(context.Background(), f.input("Find a clause."), b)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the tool was never called")
	}
	start := time.Now()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("Run returned %v after its context ended, grace 100ms", el)
	}
	run, err := f.store.GetRun(context.Background(), tenant, id)
	if err != nil || run.Status.Terminal() || run.LeaseOwner != "" {
		t.Fatalf("run after the stop = %+v, %v; want unfinished with its lease released", run, err)
	}
	for _, e := range f.journal(id) {
		if e.Key == turn.NodeComposeResult {
			t.Fatalf("the stop journaled an outcome: %+v", e)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("%d goroutines before the worker, %d after it stopped", before, after)
	}
	block.Store(false)
	start = time.Now()
	startWorker(t, b, turn.WorkerOptions{})
	res, err := waitFor(t, b, id, 10*time.Second)
	if err != nil || res.Status != turn.StatusCompleted {
		t.Fatalf("second worker: %+v, %v", res, err)
	}
	if el := time.Since(start); el > b.LeaseTTL/10 {
		t.Errorf("the second worker finished the run %v after it started, want well before the lease TTL %v", el, b.LeaseTTL)
	}
}

// flakyRuns fails the first AppendSteps calls with a transient storage
// error.
type flakyRuns struct {
	bindings.RunBinding
	bindings.RunClaimer
	fails atomic.Int64
}

func (r *flakyRuns) AppendStep(ctx context.Context, in bindings.AppendStepInput) (bindings.JournalEntry, bool, error) {
	if r.fails.Add(-1) >= 0 {
		return bindings.JournalEntry{}, false, &agents.PersistenceError{Op: "append step", Err: errors.New("connection reset")}
	}
	return r.RunBinding.AppendStep(ctx, in)
}

// TestWorkerRetriesARetryableFailure: a drive that fails on storage is
// retried with backoff and completes; the failure was reported to OnRun.
func TestWorkerRetriesARetryableFailure(t *testing.T) {
	f, b := workerFixture(t, "acme.clause-search")
	runs := &flakyRuns{RunBinding: f.store, RunClaimer: f.store}
	runs.fails.Store(2)
	b.Runs, b.Journal = runs, nil
	b.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var mu sync.Mutex
	var codes []string
	startWorker(t, b, turn.WorkerOptions{OnRun: func(_ bindings.Run, _ turn.Result, err error) {
		mu.Lock()
		defer mu.Unlock()
		codes = append(codes, agents.CodeOf(err))
	}})
	id, err := turn.Submit(context.Background(), f.input("Find a clause."), b)
	if err != nil {
		t.Fatal(err)
	}
	res, err := waitFor(t, b, id, 15*time.Second)
	if err != nil || res.Status != turn.StatusCompleted {
		t.Fatalf("Wait = %+v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(codes) < 2 || codes[0] != agents.CodePersistence || codes[len(codes)-1] != "" {
		t.Errorf("drive outcomes %q, want persistence-error first and success last", codes)
	}
}

// TestWorkerNeedsAClaimerAndAnAgentLookup: Run refuses bindings it cannot
// work with, at once.
func TestWorkerNeedsAClaimerAndAnAgentLookup(t *testing.T) {
	f, b := workerFixture(t)
	noClaim := b
	noClaim.Runs = struct{ bindings.RunBinding }{f.store}
	noLookup := b
	noLookup.Agents = nil
	for name, bb := range map[string]turn.Bindings{"no claimer": noClaim, "no lookup": noLookup} {
		if err := turn.NewWorker(bb, turn.WorkerOptions{}).Run(context.Background()); agents.CodeOf(err) != agents.CodeInvalidBindings {
			t.Errorf("%s: Run = %v, want invalid-bindings", name, err)
		}
	}
}

// TestResumeFindsTheAgent: with Bindings.Agents, Resume needs only the
// run's id.
func TestResumeFindsTheAgent(t *testing.T) {
	f := newFixture(t, emailThenAnswer(), nil)
	b := f.bindings()
	res, err := turn.Invoke(context.Background(), f.input("Send it."), b)
	if err != nil || res.Status != turn.StatusSuspended {
		t.Fatalf("Invoke = %+v, %v", res, err)
	}
	f.decide(res.Approvals, true)
	in := turn.ResumeInput{TenantID: tenant, RunID: res.RunID}
	if _, err := turn.Resume(context.Background(), in, b); agents.CodeOf(err) != agents.CodeInvalidBindings {
		t.Fatalf("Resume without an agent or a lookup: %v, want invalid-bindings", err)
	}
	b.Agents = func(_ context.Context, tenantID, id, version string) (agent.Agent, error) {
		if tenantID != tenant || id != f.agent.ID || version != f.agent.Version {
			t.Errorf("lookup of %s %s@%s", tenantID, id, version)
		}
		return f.agent, nil
	}
	done, err := turn.Resume(context.Background(), in, b)
	if err != nil || done.Status != turn.StatusCompleted {
		t.Fatalf("Resume with the lookup = %+v, %v", done, err)
	}
}

// TestTheTurnRenewsItsLease: a tool call longer than the lease TTL does
// not lose the run, because the driver renews the lease in time (an
// expired lease could not write the call's result).
func TestTheTurnRenewsItsLease(t *testing.T) {
	f, b := workerFixture(t, "acme.clause-search")
	b.LeaseTTL = 150 * time.Millisecond
	b.Tools = toolsWith(t, func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
		time.Sleep(500 * time.Millisecond)
		return json.RawMessage(`{"clauses":[]}`), nil
	})
	res, err := turn.Invoke(context.Background(), f.input("Find a clause."), b)
	if err != nil || res.Status != turn.StatusCompleted {
		t.Fatalf("Invoke with a call 3x the lease TTL = %+v, %v", res, err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestWaitReturnsARunParkedUnderADeadLease: a suspended run whose lease
// is still recorded but expired (its driver died between parking the run
// and giving the lease up) is parked, and Wait returns it as suspended
// rather than waiting for a driver that will never come: nobody claims a
// run parked on a pending approval.
func TestWaitReturnsARunParkedUnderADeadLease(t *testing.T) {
	f, b := workerFixture(t, "acme.send-email")
	res, err := turn.Invoke(context.Background(), f.input("Send the draft."), b)
	if err != nil || res.Status != turn.StatusSuspended {
		t.Fatalf("Invoke = %+v, %v; want suspended", res, err)
	}
	if _, err := f.store.AcquireLease(context.Background(), bindings.LeaseInput{TenantID: tenant, RunID: res.RunID, Owner: "dead-driver", TTL: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	got, err := waitFor(t, b, res.RunID, 10*time.Second)
	if err != nil || got.Status != turn.StatusSuspended || len(got.Approvals) != 1 || got.Approvals[0].ID != res.Approvals[0].ID {
		t.Fatalf("Wait = %+v, %v; want the run suspended on its approval", got, err)
	}
}

// TestWorkerLeavesARunParkedAgainUnleased: a worker that claims a run
// whose last driver died after parking it (journaled, status not yet
// written) parks it again, as the approval is still pending, and leaves it
// without a lease: it is not a failed drive to hold for a retry.
func TestWorkerLeavesARunParkedAgainUnleased(t *testing.T) {
	f, b := workerFixture(t, "acme.send-email")
	res, err := turn.Invoke(context.Background(), f.input("Send the draft."), b)
	if err != nil || res.Status != turn.StatusSuspended {
		t.Fatalf("Invoke = %+v, %v; want suspended", res, err)
	}
	// The driver died between the parked entry and the run's status.
	if err := f.store.SetRunStatus(context.Background(), tenant, res.RunID, bindings.RunRunning); err != nil {
		t.Fatal(err)
	}
	drove := make(chan error, 1)
	startWorker(t, b, turn.WorkerOptions{OnRun: func(r bindings.Run, _ turn.Result, err error) {
		if r.ID == res.RunID {
			select {
			case drove <- err:
			default:
			}
		}
	}})
	select {
	case err := <-drove:
		if agents.CodeOf(err) != agents.CodeHitlRequired {
			t.Fatalf("the worker's drive returned %v, want hitl-required (still pending)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no worker drove the run")
	}
	run, err := f.store.GetRun(context.Background(), tenant, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != bindings.RunSuspended || run.LeaseOwner != "" {
		t.Errorf("after the drive: status %s, lease owner %q; want suspended and unleased", run.Status, run.LeaseOwner)
	}
}
