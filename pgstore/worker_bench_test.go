package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn"
)

// answerModel asks for the agent's tool once, then answers: it reads the
// conversation it is sent, so the turns of many runs may interleave.
type answerModel struct{}

func (answerModel) ID() string { return "answer" }

func (answerModel) Models() []bindings.ModelInfo {
	return []bindings.ModelInfo{{ID: "answer-1", Features: []string{"tool-use"}}}
}

func (answerModel) Generate(_ context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	for _, m := range req.Messages {
		if m.Role == bindings.ChatTool {
			return bindings.GenerateResponse{Text: "The answer is 42."}, nil
		}
	}
	return bindings.GenerateResponse{ToolCalls: []bindings.ToolCall{{ID: "call_1", Name: "acme.lookup", Arguments: json.RawMessage(`{"q":"answer"}`)}}}, nil
}

// workerBench is a fixture for the worker benchmarks: the lookup agent
// (gated or not), bindings for the submitting host, and workers, each with
// a pool and Store of its own (as a worker process has).
type workerBench struct {
	f     *turnFixture
	a     agent.Agent
	host  turn.Bindings
	mu    sync.Mutex
	doneC map[string]chan time.Time
	// quotas, when set, are the tenant's, counted in each binding's store.
	quotas []bindings.Quota
}

func newWorkerBench(b *testing.B, gate agent.GateMode, workers int, syncCommit string, quotas ...bindings.Quota) *workerBench {
	return newWorkerBenchOn(b, gate, workers, quotas, func() *Store {
		cfg := testEnv.config.Copy()
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = syncCommit
		p, err := newPool(cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(p.Close)
		return New(p, nil)
	})
}

// newWorkerBenchOn is newWorkerBench with the Stores newStore makes (one
// for the host, one per worker).
func newWorkerBenchOn(b *testing.B, gate agent.GateMode, workers int, quotas []bindings.Quota, newStore func() *Store) *workerBench {
	testPool(b)
	w := &workerBench{f: newTurnFixture(b, newStore()), a: lookupAgent(b, gate), doneC: map[string]chan time.Time{}, quotas: quotas}
	w.host = w.bindings(w.f.store)
	for range workers {
		wb := w.bindings(newStore())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- turn.NewWorker(wb, turn.WorkerOptions{TenantIDs: []string{turnTenant}, OnRun: w.onRun}).Run(ctx)
		}()
		b.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				b.Error(err)
			}
		})
	}
	return w
}

func (w *workerBench) bindings(s *Store) turn.Bindings {
	b := w.f.bindings()
	b.Providers = bindings.Providers{answerModel{}}
	b.Conversations, b.Snapshots, b.Runs, b.Hitl, b.Memory = s, s, s, s, s
	b.Agents = func(context.Context, string, string, string) (agent.Agent, error) { return w.a, nil }
	if w.quotas != nil {
		b.Quotas, b.TenantPolicy = s, &bindings.TenantPolicy{Quotas: w.quotas}
	}
	return b
}

// expect registers a run whose completion (as OnRun reports it) the
// bench waits for.
func (w *workerBench) expect(runID string) chan time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.doneC[runID]
	if c == nil {
		c = make(chan time.Time, 4)
		w.doneC[runID] = c
	}
	return c
}

func (w *workerBench) onRun(r bindings.Run, res turn.Result, err error) {
	if err == nil {
		w.expect(r.ID) <- time.Now()
	}
}

func (w *workerBench) submit(b *testing.B) string {
	id, err := turn.Submit(context.Background(), turn.Input{TenantID: turnTenant, Agent: w.a, ConversationID: w.f.open(b, w.a), UserMessage: "What is the answer?"}, w.host)
	if err != nil {
		b.Fatal(err)
	}
	return id
}

// BenchmarkWorkers measures turns (model call → tool call → model call)
// submitted with turn.Submit and driven by 1, 2 and 4 workers on pgstore,
// each worker with a pool of its own. latency: one turn at a time, from
// Submit to the worker's end of the drive (woken by NOTIFY); throughput:
// b.N turns submitted at once, until the last completes.
func BenchmarkWorkers(b *testing.B) {
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("latency/workers=%d", workers), func(b *testing.B) {
			w := newWorkerBench(b, "", workers, "on")
			var lat []time.Duration
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				id := w.submit(b)
				lat = append(lat, (<-w.expect(id)).Sub(start))
			}
			b.StopTimer()
			reportLatency(b, lat, "submit-to-done")
		})
		b.Run(fmt.Sprintf("throughput/workers=%d", workers), func(b *testing.B) {
			benchmarkThroughput(b, newWorkerBench(b, "", workers, "on"))
		})
	}
}

// benchmarkThroughput submits b.N turns at once to w and reports turns/s
// until the last completes.
func benchmarkThroughput(b *testing.B, w *workerBench) {
	b.ReportAllocs()
	convs := make([]string, b.N)
	for i := range convs {
		convs[i] = w.f.open(b, w.a)
	}
	b.ResetTimer()
	start := time.Now()
	ids := make([]string, b.N)
	for i := range ids {
		id, err := turn.Submit(context.Background(), turn.Input{TenantID: turnTenant, Agent: w.a, ConversationID: convs[i], UserMessage: "What is the answer?"}, w.host)
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = id
	}
	var last time.Time
	for _, id := range ids {
		if t := <-w.expect(id); t.After(last) {
			last = t
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/last.Sub(start).Seconds(), "turns/s")
}

// BenchmarkApprovalContinued measures, for a submitted turn parked on its
// gated tool, the time from ResolveApproval to the worker's end of the
// continued drive: NOTIFY wakes the idle worker, which claims the run and
// finishes the turn (its tool call and last model call: 7 round trips).
// With synchronous_commit=off the commits' disk flushes drop out, leaving
// the wake-up and the round trips.
func BenchmarkApprovalContinued(b *testing.B) {
	for _, syncCommit := range []string{"on", "off"} {
		b.Run("synchronous_commit="+syncCommit, func(b *testing.B) { benchmarkApprovalContinued(b, syncCommit) })
	}
}

func benchmarkApprovalContinued(b *testing.B, syncCommit string) {
	w := newWorkerBench(b, agent.GateAlwaysAsk, 1, syncCommit)
	var lat []time.Duration
	for range b.N {
		b.StopTimer()
		id := w.submit(b)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := turn.Wait(ctx, w.host, turnTenant, id)
		cancel()
		if err != nil || res.Status != turn.StatusSuspended {
			b.Fatalf("Wait = %+v, %v", res, err)
		}
		<-w.expect(id)                   // the parking drive
		time.Sleep(5 * time.Millisecond) // let the worker go idle
		b.StartTimer()
		start := time.Now()
		if _, err := w.f.store.ResolveApproval(context.Background(), turnTenant, res.Approvals[0].ID, bindings.ApprovalDecision{Approved: true, Reviewer: "rita"}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-w.expect(id)).Sub(start))
	}
	b.StopTimer()
	reportLatency(b, lat, "decided-to-done")
}

// reportLatency reports the mean, median and 99th percentile in ms.
func reportLatency(b *testing.B, lat []time.Duration, name string) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(sum/time.Duration(len(lat))), name+"-mean-ms")
	b.ReportMetric(ms(lat[len(lat)/2]), name+"-p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), name+"-p99-ms")
}
