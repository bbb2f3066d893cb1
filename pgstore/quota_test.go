package pgstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/bindingstest"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// clockedModel answers at once and records the clock's time of every
// call.
type clockedModel struct {
	now   func() time.Time
	mu    sync.Mutex
	calls []time.Time
}

func (*clockedModel) ID() string { return "clocked" }

func (*clockedModel) Models() []bindings.ModelInfo {
	return []bindings.ModelInfo{{ID: "clocked-1", Features: []string{"tool-use"}}}
}

func (m *clockedModel) Generate(context.Context, bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, m.now())
	return bindings.GenerateResponse{Text: "Done.", Usage: bindings.Usage{InputTokens: 10, OutputTokens: 2}}, nil
}

func (m *clockedModel) times() []time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

// maxInWindow is the most calls any sliding window of d holds.
func maxInWindow(calls []time.Time, d time.Duration) int {
	slices.SortFunc(calls, func(a, b time.Time) int { return a.Compare(b) })
	most := 0
	for i, t := range calls {
		n := 0
		for _, u := range calls[:i+1] {
			if u.After(t.Add(-d)) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// TestQuotaWorkersKeepEveryWindow: eight workers over pgstore drive forty
// one-model-call turns of one tenant, submitted at once, under
// model-calls 5 per 60 s (on a fake clock shared by the stores and the
// turns). No window ever holds more than five calls. With fail, five
// turns complete and the rest end quota-exceeded with a RetryAfter and no
// model call; with wait, every turn completes, five per window.
func TestQuotaWorkersKeepEveryWindow(t *testing.T) {
	pool := testPool(t)
	for _, mode := range []string{bindings.QuotaFail, bindings.QuotaWait} {
		t.Run(mode, func(t *testing.T) {
			clock := bindingstest.NewClock(time.Time{})
			model := &clockedModel{now: clock.Now}
			a, err := agent.Define(agent.Spec{ID: "acme.quick", Version: "1.0.0", Name: "Quick", Instructions: "Answer.",
				Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}}})
			if err != nil {
				t.Fatal(err)
			}
			tenant := uniqueTenant("quota-" + mode)
			quota := bindings.Quota{Name: "per-minute", Scope: bindings.QuotaModelCalls, Limit: 5, WindowSeconds: 60, OnExceeded: mode}
			newBindings := func() turn.Bindings {
				s := New(pool, &Options{Now: clock.Now})
				return turn.Bindings{
					Providers: bindings.Providers{model}, Tools: registry.NewTools(),
					Conversations: s, Snapshots: s, Runs: s, Hitl: s, Memory: s, Quotas: s, Journal: s,
					TenantPolicy: &bindings.TenantPolicy{Quotas: []bindings.Quota{quota}},
					Agents:       func(context.Context, string, string, string) (agent.Agent, error) { return a, nil },
					Now:          clock.Now,
				}
			}
			host := newBindings()
			hostStore := host.Runs.(*Store)
			ids := make([]string, 40)
			for i := range ids {
				c, err := hostStore.OpenConversation(t.Context(), bindings.OpenConversationInput{TenantID: tenant, AgentID: a.ID, AgentVersion: a.Version})
				if err != nil {
					t.Fatal(err)
				}
				if ids[i], err = turn.Submit(t.Context(), turn.Input{TenantID: tenant, Agent: a, ConversationID: c.ID, UserMessage: "Go."}, host); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for range 8 {
				w := turn.NewWorker(newBindings(), turn.WorkerOptions{TenantIDs: []string{tenant}, MaxConcurrent: 2, PollInterval: 10 * time.Millisecond})
				wg.Go(func() {
					if err := w.Run(ctx); err != nil {
						t.Error(err)
					}
				})
			}
			defer func() { cancel(); wg.Wait() }()

			statuses := func() map[bindings.RunStatus]int {
				n := map[bindings.RunStatus]int{}
				for _, id := range ids {
					run, err := hostStore.GetRun(t.Context(), tenant, id)
					if err != nil {
						t.Fatal(err)
					}
					if run.Status == bindings.RunQueued && !run.NotBefore.After(clock.Now()) {
						n["claimable"]++
					}
					n[run.Status]++
				}
				return n
			}
			deadline := time.Now().Add(90 * time.Second)
			for {
				n := statuses()
				if n[bindings.RunCompleted]+n[bindings.RunFailed] == len(ids) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("runs did not finish: %v", n)
				}
				if mode == bindings.QuotaWait && n[bindings.RunRunning] == 0 && n["claimable"] == 0 && n[bindings.RunQueued] > 0 {
					// Every unfinished run waits on the window.
					clock.Advance(60 * time.Second)
				}
				time.Sleep(20 * time.Millisecond)
			}
			calls := model.times()
			if most := maxInWindow(calls, 60*time.Second); most > 5 {
				t.Errorf("a 60 s window holds %d model calls, want at most 5", most)
			}
			n := statuses()
			switch mode {
			case bindings.QuotaFail:
				if len(calls) != 5 || n[bindings.RunCompleted] != 5 || n[bindings.RunFailed] != 35 {
					t.Fatalf("%d model calls, statuses %v; want 5 calls, 5 completed, 35 failed", len(calls), n)
				}
				for _, id := range ids {
					_, err := turn.Wait(t.Context(), host, tenant, id)
					var qe *agents.QuotaExceededError
					if err != nil && (!errors.As(err, &qe) || qe.Quota != "per-minute" || qe.RetryAfter <= 0 || qe.RetryAfter > time.Minute) {
						t.Errorf("run %s: %v, want quota-exceeded of per-minute with a RetryAfter of at most 60s", id, err)
					}
				}
			case bindings.QuotaWait:
				if len(calls) != 40 || n[bindings.RunCompleted] != 40 {
					t.Fatalf("%d model calls, statuses %v; want 40 calls, all completed", len(calls), n)
				}
				if got := len(slices.Compact(slices.Clone(calls))); got != 8 {
					t.Errorf("the calls fell in %d windows, want 8 of 5", got)
				}
			}
		})
	}
}

// TestQuotaWaitOnInvoke: a turns quota with wait refuses an Invoke at the
// start of a new run (before anything of it is stored, with pgstore's
// optimistic open): Invoke returns quota-exceeded with the run id, and
// the run is stored queued until the window frees.
func TestQuotaWaitOnInvoke(t *testing.T) {
	pool := testPool(t)
	clock := bindingstest.NewClock(time.Time{})
	s := New(pool, &Options{Now: clock.Now})
	f := newTurnFixture(t, s)
	a := lookupAgent(t, "")
	b := f.bindings()
	b.Quotas, b.Now = s, clock.Now
	// A quota of its own: the fixture's tenant is shared by the package's tests.
	b.TenantPolicy = &bindings.TenantPolicy{Quotas: []bindings.Quota{{Name: uniqueTenant("turns"), Scope: bindings.QuotaTurns, Limit: 1, WindowSeconds: 600, OnExceeded: bindings.QuotaWait}}}
	tenant := turnTenant
	if _, err := f.invoke(t.Context(), b, a, f.open(t, a)); err != nil {
		t.Fatalf("first turn: %v", err)
	}
	clock.Advance(time.Minute)
	res, err := f.invoke(t.Context(), b, a, f.open(t, a))
	var qe *agents.QuotaExceededError
	if !errors.As(err, &qe) || qe.RetryAfter != 9*time.Minute || res.RunID == "" {
		t.Fatalf("second turn: %+v, %v; want quota-exceeded retrying after 9m with the run id", res, err)
	}
	run, err := s.GetRun(t.Context(), tenant, res.RunID)
	if err != nil || run.Status != bindings.RunQueued || !run.NotBefore.Equal(clock.Now().Add(9*time.Minute)) || run.LeaseOwner != "" {
		t.Fatalf("waiting run: %+v, %v", run, err)
	}
}
