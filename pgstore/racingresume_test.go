package pgstore

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/logbuf"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// The racing resumers: a run crashes (the process exits) while a model or
// tool call is in flight, so its journal holds the step's started entry
// and no result; then sixteen processes Resume it at once. Each process
// appends a line per model or tool call to a shared file, which counts the
// calls of all of them: the step runs at most once more in total, with the
// crashed call's request id, and every process that lost calls nothing.

// Environment of a racing-resume helper process (see racingHelper).
const (
	racingHelperEnv = "KINDGI_PGSTORE_RACING_HELPER" // "crash-model", "crash-tool" or "resume"
	racingDBEnv     = "KINDGI_PGSTORE_RACING_DB"     // the test binary's database
	racingCallsEnv  = "KINDGI_PGSTORE_RACING_CALLS"  // the file the calls are appended to
	racingRunEnv    = "KINDGI_PGSTORE_RACING_RUN"    // the run id
	racingConvEnv   = "KINDGI_PGSTORE_RACING_CONV"   // the conversation id
)

// racingResumers is how many processes resume the crashed run at once.
const racingResumers = 16

// racingCallTime is how long a resumer's model or tool call takes: long
// enough for every resumer to read the run before the first one's call
// returns, so that a resumer that called before holding the lease would
// be seen calling.
const racingCallTime = 300 * time.Millisecond

func TestRacingResumersOfACrashedModelCall(t *testing.T) {
	testRacingResumers(t, "crash-model", "model", "agent-loop/1/model-call")
}

func TestRacingResumersOfACrashedToolCall(t *testing.T) {
	testRacingResumers(t, "crash-tool", "tool", "agent-loop/1/dispatch-tools/call_1")
}

// testRacingResumers crashes a run in a helper process (mode) at the call
// of kind in flight under step key, then races racingResumers helper
// processes to Resume it.
func testRacingResumers(t *testing.T, mode, kind, key string) {
	pool := testPool(t)
	ctx := t.Context()
	store := New(pool, nil)
	_, conv := racingConversation(t, store)
	calls := filepath.Join(t.TempDir(), "calls")
	runID := "racing-" + strings.TrimPrefix(mode, "crash-")
	env := []string{racingDBEnv + "=" + testEnv.name, racingCallsEnv + "=" + calls, racingRunEnv + "=" + runID, racingConvEnv + "=" + conv.ID}

	crash := racingProc(t, mode, env)
	if out, err := crash.CombinedOutput(); !isExit(err, racingCrashExit) {
		t.Fatalf("crashing process: %v, want exit status %d:\n%s", err, racingCrashExit, out)
	}
	crashed := readCalls(t, calls)
	if len(crashed) != 1 || crashed[0].kind != kind {
		t.Fatalf("calls before the resumers: %+v, want the one %s call that crashed", crashed, kind)
	}
	journal, err := store.ReadJournal(ctx, turnTenant, runID)
	if err != nil {
		t.Fatal(err)
	}
	if started, done := phasesOf(journal, key); !started || done {
		t.Fatalf("crashed journal: %s started %v, with a result %v; want started with no result", key, started, done)
	}
	waitLeaseExpired(t, store, runID)

	// Start every resumer, wait until each is ready, then let them go at
	// once (closing their stdin).
	procs := make([]*racingResumer, racingResumers)
	for i := range procs {
		procs[i] = startResumer(t, env)
	}
	for _, p := range procs {
		p.ready(t)
	}
	for _, p := range procs {
		_ = p.stdin.Close()
	}
	var won int
	byPID := map[int]string{}
	for _, p := range procs {
		res := p.result(t)
		byPID[p.cmd.Process.Pid] = res
		switch {
		case res == "ok completed":
			won++
		case strings.HasPrefix(res, "err "+agents.CodeRunBusy+" "):
		default:
			t.Errorf("resumer %d: %q, want completed or %s", p.cmd.Process.Pid, res, agents.CodeRunBusy)
		}
	}
	if won == 0 {
		t.Fatalf("no resumer completed the run: %v", byPID)
	}

	all := readCalls(t, calls)
	var again []racingCall
	for _, c := range all[1:] {
		res, ok := byPID[c.pid]
		if !ok {
			t.Errorf("call %+v from a process that is not a resumer", c)
			continue
		}
		if res != "ok completed" {
			t.Errorf("resumer %d called %s (request %s), then failed %q: a loser must call nothing", c.pid, c.kind, c.requestID, res)
		}
		if c.kind == kind {
			again = append(again, c)
		}
	}
	if len(again) > 1 {
		t.Errorf("the crashed %s call ran %d more times across the resumers, want at most once: %+v", kind, len(again), again)
	}
	for _, c := range again {
		if c.requestID != crashed[0].requestID {
			t.Errorf("the %s call ran again with request id %q, want the crashed call's %q", kind, c.requestID, crashed[0].requestID)
		}
	}
	t.Logf("%d of %d resumers completed, %d failed run-busy; %s calls after the crash: %d", won, racingResumers, racingResumers-won, kind, len(again))
	run, err := store.GetRun(ctx, turnTenant, runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != bindings.RunCompleted {
		t.Errorf("run status %s, want completed", run.Status)
	}
}

// racingCrashExit is the exit status of a helper process that crashed in
// its call.
const racingCrashExit = 7

// racingCall is one line of the calls file: a model or tool call, the
// process that made it and its request id.
type racingCall struct {
	kind      string
	pid       int
	requestID string
}

func readCalls(t *testing.T, path string) []racingCall {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []racingCall
	for l := range strings.Lines(string(raw)) {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Fatalf("calls file line %q", l)
		}
		pid, err := strconv.Atoi(f[1])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, racingCall{kind: f[0], pid: pid, requestID: f[2]})
	}
	return out
}

// phasesOf reports whether journal holds a started entry and a result for
// key.
func phasesOf(journal []bindings.JournalEntry, key string) (started, result bool) {
	for _, e := range journal {
		if e.Key != key {
			continue
		}
		if e.Status == bindings.StepStarted {
			started = true
		} else {
			result = true
		}
	}
	return started, result
}

// waitLeaseExpired waits until the crashed driver's lease on run expired.
func waitLeaseExpired(t *testing.T, s *Store, runID string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		run, err := s.GetRun(t.Context(), turnTenant, runID)
		if err != nil {
			t.Fatal(err)
		}
		if run.LeaseOwner == "" || !run.LeaseExpiresAt.After(time.Now()) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the crashed driver's lease never expired: %+v", run)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func isExit(err error, code int) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == code
}

// racingProc is a helper process of this test binary in mode.
func racingProc(t *testing.T, mode string, env []string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{racingHelperEnv + "=" + mode}, env...)...)
	return cmd
}

// racingResumer is a resume helper process: it prints "ready", waits for
// its stdin to close, resumes the run and prints "result ok <status>" or
// "result err <code> <message>".
type racingResumer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	errOut logbuf.Buffer
}

func startResumer(t *testing.T, env []string) *racingResumer {
	t.Helper()
	p := &racingResumer{cmd: racingProc(t, "resume", env), lines: make(chan string, 16)}
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = &p.errOut
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = p.stdin.Close()
		_ = p.cmd.Process.Kill()
		for range p.lines {
		}
		<-done
		_ = p.cmd.Wait()
	})
	return p
}

func (p *racingResumer) stderr() string { return p.errOut.String() }

func (p *racingResumer) next(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatalf("resumer %d exited early:\n%s", p.cmd.Process.Pid, p.stderr())
		}
		return l
	case <-time.After(2 * time.Minute):
		t.Fatalf("resumer %d is silent:\n%s", p.cmd.Process.Pid, p.stderr())
	}
	return ""
}

func (p *racingResumer) ready(t *testing.T) {
	t.Helper()
	if l := p.next(t); l != "ready" {
		t.Fatalf("resumer %d: %q, want ready:\n%s", p.cmd.Process.Pid, l, p.stderr())
	}
}

func (p *racingResumer) result(t *testing.T) string {
	t.Helper()
	l := p.next(t)
	res, ok := strings.CutPrefix(l, "result ")
	if !ok {
		t.Fatalf("resumer %d: %q, want its result:\n%s", p.cmd.Process.Pid, l, p.stderr())
	}
	return res
}

// racingAgent is the lookup agent of the racing resumers.
func racingAgent() (agent.Agent, error) {
	return agent.Define(agent.Spec{
		ID: "acme.racing-agent", Version: "1.0.0", Name: "Racing", Instructions: "You look things up.",
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		Tools:        []agent.ToolRef{{ID: "acme.lookup", Version: "^1.0.0"}},
	})
}

// racingConversation is racingAgent with a conversation of turnTenant
// opened for it on store.
func racingConversation(t *testing.T, store *Store) (agent.Agent, bindings.Conversation) {
	t.Helper()
	a, err := racingAgent()
	if err != nil {
		t.Fatal(err)
	}
	conv, err := store.OpenConversation(t.Context(), bindings.OpenConversationInput{TenantID: turnTenant, AgentID: a.ID, AgentVersion: a.Version})
	if err != nil {
		t.Fatal(err)
	}
	return a, conv
}

// racingHelper is the body of a helper process in mode (racingHelperEnv),
// run by TestMain instead of the tests; it returns the exit status.
//
//   - crash-model invokes the turn, whose model call records itself and
//     exits the process (racingCrashExit) while in flight;
//   - crash-tool invokes it with a model that asks for the tool, and the
//     tool records itself and exits;
//   - resume prints "ready", waits for stdin to close, resumes the run
//     (its model and tool record themselves, take racingCallTime and
//     answer) and prints its result.
func racingHelper(mode string) int {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(os.Getenv(testDatabaseEnv))
	if err != nil {
		return helperFail(err)
	}
	cfg.ConnConfig.Database = os.Getenv(racingDBEnv)
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return helperFail(err)
	}
	defer pool.Close()
	store := New(pool, nil)
	a, err := racingAgent()
	if err != nil {
		return helperFail(err)
	}
	crash := strings.HasPrefix(mode, "crash-")
	record := func(kind, requestID string) {
		if err := appendCall(os.Getenv(racingCallsEnv), kind, requestID); err != nil {
			os.Exit(helperFail(err))
		}
	}
	tools := registry.NewTools()
	err = tools.Add(turnTenant, bindings.ToolDescriptor{
		ID: "acme.lookup", Version: "1.0.0", Description: "Look a term up.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, func(_ context.Context, _ json.RawMessage, cc bindings.CallContext) (json.RawMessage, error) {
		record("tool", cc.RequestID)
		if crash {
			os.Exit(racingCrashExit)
		}
		time.Sleep(racingCallTime)
		return json.RawMessage(`{"answer":"42"}`), nil
	})
	if err != nil {
		return helperFail(err)
	}
	model := racingModel{generate: func(req bindings.GenerateRequest) bindings.GenerateResponse {
		hasTool := false
		for _, m := range req.Messages {
			hasTool = hasTool || m.Role == bindings.ChatTool
		}
		if mode == "crash-tool" && !hasTool {
			return bindings.GenerateResponse{ToolCalls: []bindings.ToolCall{{ID: "call_1", Name: "acme.lookup", Arguments: json.RawMessage(`{"q":"answer"}`)}}}
		}
		record("model", req.RequestID)
		if crash {
			os.Exit(racingCrashExit)
		}
		time.Sleep(racingCallTime)
		return bindings.GenerateResponse{Text: "The answer is 42."}
	}}
	b := storeBindings(store)
	b.Providers, b.Tools = bindings.Providers{model}, tools
	b.LeaseTTL = time.Second // the crashed lease expires soon
	runID := os.Getenv(racingRunEnv)
	if crash {
		_, err := turn.Invoke(ctx, turn.Input{TenantID: turnTenant, RunID: runID, Agent: a, ConversationID: os.Getenv(racingConvEnv), UserMessage: "What is the answer?"}, b)
		return helperFail(fmt.Errorf("the turn did not crash: %v", err))
	}
	b.LeaseTTL = time.Minute
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	res, err := turn.Resume(ctx, turn.ResumeInput{TenantID: turnTenant, RunID: runID, Agent: a}, b)
	if err != nil {
		fmt.Printf("result err %s %s\n", agents.CodeOf(err), err)
	} else {
		fmt.Printf("result ok %s\n", res.Status)
	}
	return 0
}

func helperFail(err error) int {
	fmt.Fprintln(os.Stderr, "racing helper:", err)
	return 2
}

// appendCall appends one line to the calls file: one write of a line far
// shorter than PIPE_BUF to a file opened O_APPEND, so the lines of
// processes appending at once never interleave.
func appendCall(path, kind, requestID string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%s %d %s\n", kind, os.Getpid(), requestID)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// racingModel is a provider whose answers generate makes.
type racingModel struct {
	generate func(bindings.GenerateRequest) bindings.GenerateResponse
}

func (racingModel) ID() string { return "racing" }

func (racingModel) Models() []bindings.ModelInfo {
	return []bindings.ModelInfo{{ID: "racing-1", Features: []string{"tool-use"}}}
}

func (m racingModel) Generate(_ context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	return m.generate(req), nil
}
