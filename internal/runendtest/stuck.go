package runendtest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/logbuf"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// StuckStore is what RunStuck needs of one store: a turn's bindings, with
// claims and the record of failed drives.
type StuckStore interface {
	Store
	bindings.RunClaimer
	bindings.RunErrorRecorder
}

// RunStuck checks, over any store, that a run no worker can drive
// explains itself and ends, for a run whose workers' bindings lack the
// provider it was routed to, and for one whose workers lack a tool it
// resolved: two workers drive it in turn, each failed drive recorded on
// the run (the code, a message that says the worker cannot drive it with
// its own bindings, the count, across both workers); the worker log lines
// carry the message and retryable=true; after maxAttempts failed drives
// in all the run is failed with that code, and its LastError is cleared.
// The store's clock must be the wall clock; newStore may return one store
// for both cases.
func RunStuck(t *testing.T, newStore func(t *testing.T) StuckStore) {
	t.Helper()
	t.Run("ProviderMissing", func(t *testing.T) {
		runStuck(t, newStore(t), agents.CodeCapabilityRoutingFailed, "provider", func(b *turn.Bindings) {
			b.Providers = bindings.Providers{scripted.New(nil, &scripted.Options{ID: "elsewhere"})}
		})
	})
	t.Run("ToolMissing", func(t *testing.T) {
		runStuck(t, newStore(t), agents.CodeUnresolvedTool, "acme.lookup", func(b *turn.Bindings) {
			b.Tools = registry.NewTools()
		})
	})
}

// runStuck is one case of RunStuck: lacking changes the workers' bindings
// so that they cannot drive the run, which then fails with code and a
// message holding about.
func runStuck(t *testing.T, s StuckStore, code, about string, lacking func(*turn.Bindings)) {
	t.Helper()
	const maxAttempts = 3
	c := newCaseGated(t, s, true, scripted.Call("call_1", "acme.lookup", map[string]any{"q": "x"}), scripted.Say("Done."))
	a := c.agent
	// The run parks on its approval, routed to the scripted provider.
	res, err := turn.Invoke(t.Context(), turn.Input{TenantID: Tenant, Agent: a, ConversationID: c.conv, UserMessage: "Look it up.", RunID: "stuck-" + c.conv}, c.b)
	if err != nil || res.Status != turn.StatusSuspended || len(res.Approvals) != 1 {
		t.Fatalf("Invoke: %s, %d approvals, %v: want it parked on one approval", res.Status, len(res.Approvals), err)
	}
	if _, err := s.ResolveApproval(t.Context(), Tenant, res.Approvals[0].ID, bindings.ApprovalDecision{Approved: true, Reviewer: "rev"}); err != nil {
		t.Fatal(err)
	}

	// Two workers whose only provider is another one: neither can drive it.
	var logs logbuf.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	wb := c.b
	lacking(&wb)
	wb.Logger = logger
	lookup := func(context.Context, string, string, string) (agent.Agent, error) { return a, nil }
	var drives, seen atomic.Int64
	var mu sync.Mutex
	var recorded []bindings.RunError
	onRun := func(run bindings.Run, _ turn.Result, err error) {
		drives.Add(1)
		if agents.CodeOf(err) != code {
			t.Errorf("drive: %v, want %s", err, code)
		}
		if got, gerr := s.GetRun(context.Background(), run.TenantID, run.ID); gerr == nil && got.LastError != nil {
			seen.Add(1)
			mu.Lock()
			recorded = append(recorded, *got.LastError)
			mu.Unlock()
		}
	}
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for range 2 {
		w := turn.NewWorker(wb, turn.WorkerOptions{Agents: lookup, TenantIDs: []string{Tenant}, PollInterval: 20 * time.Millisecond,
			MaxDriveAttempts: maxAttempts, SweepInterval: -1, OnRun: onRun})
		wg.Go(func() {
			if err := w.Run(ctx); err != nil {
				t.Errorf("worker: %v", err)
			}
		})
	}
	runID := res.RunID
	deadline := time.Now().Add(time.Minute)
	var run bindings.Run
	for time.Now().Before(deadline) {
		if run, err = s.GetRun(t.Context(), Tenant, runID); err == nil && run.Status.Terminal() {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	wg.Wait()

	if run.Status != bindings.RunFailed {
		t.Fatalf("run %s after %d drives (LastError %+v): want it failed after %d", run.Status, drives.Load(), run.LastError, maxAttempts)
	}
	if run.LastError != nil {
		t.Errorf("a failed run keeps LastError %+v", *run.LastError)
	}
	if n := drives.Load(); n != maxAttempts {
		t.Errorf("%d drives by two workers, want %d: the count holds across workers", n, maxAttempts)
	}
	mu.Lock()
	for _, e := range recorded {
		if e.Code != code || !strings.Contains(e.Message, "cannot drive this run with its own bindings") || !strings.Contains(e.Message, about) || e.Attempts < 1 || e.At.IsZero() {
			t.Errorf("recorded %+v: want %s, a message saying the worker cannot drive it, a count and a time", e, code)
		}
	}
	mu.Unlock()
	if seen.Load() < maxAttempts-1 {
		t.Errorf("LastError shown after %d of %d failed drives", seen.Load(), drives.Load())
	}
	// The outcome is journaled: a Resume with bindings that could drive it
	// returns the same code and calls nothing.
	calls := c.provider.Calls()
	_, err = turn.Resume(t.Context(), turn.ResumeInput{TenantID: Tenant, RunID: runID, Agent: a}, c.b)
	if agents.CodeOf(err) != code || c.provider.Calls() != calls || c.args != "" {
		t.Errorf("Resume of the failed run: %v (tool arguments %q)", err, c.args)
	}
	checkLogs(t, logs.String(), code, about, maxAttempts)
}

// checkLogs checks the workers' log lines: every retry says
// retryable=true with the error's message, the last says retryable=false.
func checkLogs(t *testing.T, logs, code, about string, maxAttempts int) {
	t.Helper()
	retries, finals := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		switch rec["msg"] {
		case "worker drive failed; retrying later":
			retries++
			if rec["retryable"] != true || !strings.Contains(fmt.Sprint(rec["error"]), about) || rec["code"] != code {
				t.Errorf("retry line %s: want retryable=true, the code and the message", line)
			}
		case "worker failed run for good":
			finals++
			if rec["retryable"] != false || !strings.Contains(fmt.Sprint(rec["error"]), about) || rec["attempts"] != float64(maxAttempts) {
				t.Errorf("final line %s: want retryable=false, the message and attempts %d", line, maxAttempts)
			}
		}
	}
	if retries != maxAttempts-1 || finals != 1 {
		t.Errorf("%d retry lines and %d final lines, want %d and 1:\n%s", retries, finals, maxAttempts-1, logs)
	}
}
