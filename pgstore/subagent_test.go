package pgstore

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// TestSubAgentApprovalAcrossProcesses: on PostgreSQL, a parent whose
// sub-agent's tool asks for approval is suspended with the child's
// approval; after the decision, Resume of the parent from another
// process (a new Store over the same database) finishes the child, then
// the parent, the tool having run once.
func TestSubAgentApprovalAcrossProcesses(t *testing.T) {
	pool := testPool(t)
	g := newGatedTree(t, pool)
	f, bind := g.f, g.bind
	res := g.park(t)
	if _, err := f.store.ResolveApproval(t.Context(), turnTenant, res.Approvals[0].ID, bindings.ApprovalDecision{Approved: true, Reviewer: "rita"}); err != nil {
		t.Fatal(err)
	}
	other := New(pool, nil) // another process over the same database
	done, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: turnTenant, RunID: res.RunID}, bind(other))
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if done.Status != turn.StatusCompleted || done.Response.Content != "The answer is 42." || len(done.SubRuns) != 1 {
		t.Fatalf("parent %+v", done)
	}
	if n := f.executed.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
	cu, pu := done.SubRuns[0].Usage, done.Usage
	if cu.ModelCalls != 2 || pu.ModelCalls != 4 || pu.CostUsd < cu.CostUsd {
		t.Errorf("parent usage %+v, child usage %+v", pu, cu)
	}
	for _, id := range []string{res.RunID, res.Approvals[0].RunID} {
		if run, err := other.GetRun(t.Context(), turnTenant, id); err != nil || run.Status != bindings.RunCompleted {
			t.Errorf("run %s: %+v, %v", id, run, err)
		}
	}
}

// TestSubAgentApprovalWorkersFinishTree is the acceptance of issue 24 on
// PostgreSQL: parent → child (a sub-agent) → gated tool. The parent is
// suspended with the child's approval; once it is decided through the
// HITL binding, two workers (each over its own Store on the same
// database, as two processes) — and no Resume call — finish the child,
// then the parent. The tool ran once, the parent's usage covers the
// child's, the parent's provenance verifies and names the child's record,
// and ListRuns by parent lists the child.
func TestSubAgentApprovalWorkersFinishTree(t *testing.T) {
	pool := workerTestPool(t)
	g := newGatedTree(t, pool)
	f, bind, provider, keys, records := g.f, g.bind, g.provider, g.keys, g.records
	ctx := t.Context()
	res := g.park(t)
	childID := res.Approvals[0].RunID
	kids, err := f.store.ListRuns(ctx, bindings.ListRunsInput{TenantID: turnTenant, ParentRunID: res.RunID})
	if err != nil || len(kids.Runs) != 1 || kids.Runs[0].ID != childID || kids.Runs[0].ParentRunID != res.RunID || kids.Runs[0].Status != bindings.RunSuspended {
		t.Fatalf("ListRuns by parent: %+v, %v; want the suspended child %s", kids, err, childID)
	}

	// Two workers, started before the decision: nothing is claimable yet.
	wctx, stop := context.WithCancel(ctx)
	var (
		mu     sync.Mutex
		driven []string
		wg     sync.WaitGroup
	)
	errs := make(chan error, 2)
	for range 2 {
		w := turn.NewWorker(bind(New(pool, nil)), turn.WorkerOptions{
			TenantIDs: []string{turnTenant}, MaxConcurrent: 1, PollInterval: 20 * time.Millisecond, SweepInterval: -1,
			OnRun: func(run bindings.Run, _ turn.Result, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					driven = append(driven, run.ID)
				}
			},
		})
		wg.Add(1)
		go func() { defer wg.Done(); errs <- w.Run(wctx) }()
	}
	var once sync.Once
	stopWorkers := func() {
		once.Do(func() {
			stop()
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Errorf("worker: %v", err)
				}
			}
		})
	}
	defer stopWorkers()
	time.Sleep(100 * time.Millisecond)
	if n := f.executed.Load(); n != 0 || provider.Calls() != 2 {
		t.Fatalf("before the decision: the tool ran %d times, the model was called %d times", n, provider.Calls())
	}
	if _, err := f.store.ResolveApproval(ctx, turnTenant, res.Approvals[0].ID, bindings.ApprovalDecision{Approved: true, Reviewer: "rita"}); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	done, err := turn.Wait(waitCtx, bind(New(pool, nil)), turnTenant, res.RunID)
	if err != nil {
		t.Fatalf("Wait for the parent: %v", err)
	}
	if done.Status != turn.StatusCompleted || done.Response.Content != "The answer is 42." || len(done.SubRuns) != 1 || done.SubRuns[0].RunID != childID {
		t.Fatalf("parent %+v", done)
	}
	if n := f.executed.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
	cu, pu := done.SubRuns[0].Usage, done.Usage
	if cu.ModelCalls != 2 || pu.ModelCalls != 4 || pu.CostUsd < cu.CostUsd || pu.InputTokens < cu.InputTokens {
		t.Errorf("parent usage %+v, child usage %+v", pu, cu)
	}
	// The parent's end reaches OnRun once its drive returned: stop the
	// workers (they let their drives finish) before reading the order.
	stopWorkers()
	mu.Lock()
	order := append([]string(nil), driven...)
	mu.Unlock()
	if len(order) < 2 || order[0] != childID || order[len(order)-1] != res.RunID {
		t.Errorf("the workers drove %v, want the child, then the parent", order)
	}
	for _, id := range []string{res.RunID, childID} {
		if run, err := f.store.GetRun(ctx, turnTenant, id); err != nil || run.Status != bindings.RunCompleted {
			t.Errorf("run %s: %+v, %v", id, run, err)
		}
	}

	// Provenance: the parent's record names the child's and verifies as a
	// chain; the child's stored record is the one named.
	p := done.Provenance
	if p == nil {
		rec, ok := records.Provenance(turnTenant, res.RunID)
		if !ok {
			t.Fatal("the parent recorded no provenance")
		}
		p = &rec
	}
	if len(p.SubRuns) != 1 || p.SubRuns[0].RunID != childID || p.SubRuns[0].RecordHash == "" || p.SubRuns[0].Record == nil {
		t.Fatalf("parent provenance sub-runs %+v, want the child's record named", p.SubRuns)
	}
	if err := turn.VerifyProvenance(ctx, *p, keys); err != nil {
		t.Fatalf("VerifyProvenance of the parent: %v", err)
	}
	stored, ok := records.Provenance(turnTenant, childID)
	if !ok || stored.RunID != childID || !bytes.Equal(stored.Signature, p.SubRuns[0].Record.Signature) {
		t.Errorf("the child's stored record (%v) is not the one the parent embeds", ok)
	}
}

// TestSubAgentTurnRoundTrips counts the round trips of a turn with one
// sub-agent call on pgstore (the parent's two model calls around a child
// run that is the one-tool-call turn of TestTurnWithOneToolCallRoundTrips),
// for BENCHMARKS.md: at most the parent's own turn, the child's turn and
// the few the call adds (its started and completed entries, the child's
// conversation).
func TestSubAgentTurnRoundTrips(t *testing.T) {
	pool, rt := tracedPool(t, 1)
	f := newTurnFixture(t, New(pool, nil))
	child := lookupAgent(t, "")
	parent, err := agent.Define(agent.Spec{
		ID: "acme.parent", Version: "1.0.0", Name: "Parent", Instructions: "You delegate.",
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		SubAgents:    []agent.AgentRef{{ID: child.ID, Version: "^1.0.0", Name: "lookup_agent"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.NewAgents(parent, child)
	if err != nil {
		t.Fatal(err)
	}
	b := f.bindings(
		scripted.Call("call_1", "lookup_agent", map[string]any{"message": "Look the answer up."}),
		scripted.Call("c_1", "acme.lookup", map[string]any{"q": "answer"}),
		scripted.Say("42."),
		scripted.Say("The answer is 42."),
	)
	b.Agents, b.AgentVersions = reg.Lookup, reg.Versions
	turnOnce := func(conv string) turn.Result {
		t.Helper()
		res, err := turn.Invoke(t.Context(), turn.Input{TenantID: turnTenant, Agent: parent, ConversationID: conv, UserMessage: "What is the answer?"}, b)
		if err != nil || res.Status != turn.StatusCompleted || len(res.SubRuns) != 1 {
			t.Fatalf("turn: %+v, %v", res, err)
		}
		return res
	}
	turnOnce(f.open(t, parent)) // prepares the statements on the connection
	conv := f.open(t, parent)
	rt.reset()
	turnOnce(conv)
	queries, batches, writes, ops := rt.snapshot()
	_, commits := rt.statements()
	t.Logf("turn with one sub-agent call: %d round trips (%d batches, %d plain statements, %d socket writes, %d commits): %v", batches+queries, batches, queries, writes, commits, ops)
	if rtrips := batches + queries; rtrips > 2*maxTurnRoundTrips+6 {
		t.Errorf("%d round trips, want at most %d", rtrips, 2*maxTurnRoundTrips+6)
	}
}

// gatedTree is a parent agent whose sub-agent, lookup_agent (lookupAgent
// gated always_ask), parks on its tool, with a model scripted for one turn
// of the tree (usage on each call) and signed provenance.
type gatedTree struct {
	f        *turnFixture
	parent   agent.Agent
	reg      *registry.Agents
	provider *scripted.Provider
	keys     *memstore.Keys
	records  *memstore.Store // where the signed records go
}

func newGatedTree(t *testing.T, pool *pgxpool.Pool) *gatedTree {
	t.Helper()
	g := &gatedTree{f: newTurnFixture(t, New(pool, nil)), keys: memstore.NewKeys([]byte("gated-tree-seed")), records: memstore.New(nil)}
	child := lookupAgent(t, agent.GateAlwaysAsk)
	var err error
	if g.parent, err = agent.Define(agent.Spec{
		ID: "acme.parent", Version: "1.0.0", Name: "Parent", Instructions: "You delegate.",
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		SubAgents:    []agent.AgentRef{{ID: child.ID, Version: "^1.0.0", Name: "lookup_agent"}},
	}); err != nil {
		t.Fatal(err)
	}
	if g.reg, err = registry.NewAgents(g.parent, child); err != nil {
		t.Fatal(err)
	}
	g.provider = scripted.New([]scripted.Response{
		scripted.Call("call_1", "lookup_agent", map[string]any{"message": "Look the answer up."}).WithUsage(100, 10, 0.001),
		scripted.Call("c_1", "acme.lookup", map[string]any{"q": "answer"}).WithUsage(40, 4, 0.0004),
		scripted.Say("42.").WithUsage(30, 3, 0.0003),
		scripted.Say("The answer is 42.").WithUsage(200, 20, 0.002),
	}, nil)
	return g
}

// bind is the bindings of the tree's turns over s.
func (g *gatedTree) bind(s *Store) turn.Bindings {
	b := g.f.over(s, g.provider, g.reg)
	b.Provenance = bindings.ProvenanceBindings{Emitter: g.records, Keys: g.keys}
	return b
}

// park runs the parent's turn, which parks on the child's approval.
func (g *gatedTree) park(t *testing.T) turn.Result {
	t.Helper()
	conv := g.f.open(t, g.parent)
	res, err := turn.Invoke(t.Context(), turn.Input{TenantID: turnTenant, Agent: g.parent, ConversationID: conv, UserMessage: "What is the answer?"}, g.bind(g.f.store))
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if res.Status != turn.StatusSuspended || len(res.Approvals) != 1 || res.Approvals[0].ToolID != "acme.lookup" || !strings.HasPrefix(res.Approvals[0].RunID, res.RunID+"/") {
		t.Fatalf("parent %s with approvals %+v, want suspended with the child's", res.Status, res.Approvals)
	}
	if n := g.f.executed.Load(); n != 0 {
		t.Fatalf("the tool ran %d times before the decision", n)
	}
	return res
}
