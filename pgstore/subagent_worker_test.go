package pgstore

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// TestSubAgentApprovalWorkersFinishTree is the acceptance of issue 24 on
// PostgreSQL: parent → child (a sub-agent) → gated tool. The parent is
// suspended with the child's approval; once it is decided through the
// HITL binding, two workers (each over its own Store on the same
// database, as two processes) — and no Resume call — finish the child,
// then the parent. The tool ran once, the parent's usage covers the
// child's, the parent's provenance verifies and names the child's record,
// and ListRuns by parent lists the child.
func TestSubAgentApprovalWorkersFinishTree(t *testing.T) {
	pool := testPool(t)
	f := newTurnFixture(t, New(pool, nil))
	child := lookupAgent(t, agent.GateAlwaysAsk)
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
	// The model calls are keyed by the system prompt, not by order: two
	// workers may drive parent and child in any interleaving of drives.
	provider := scripted.New([]scripted.Response{
		scripted.Call("call_1", "lookup_agent", map[string]any{"message": "Look the answer up."}).WithUsage(100, 10, 0.001),
		scripted.Call("c_1", "acme.lookup", map[string]any{"q": "answer"}).WithUsage(40, 4, 0.0004),
		scripted.Say("42.").WithUsage(30, 3, 0.0003),
		scripted.Say("The answer is 42.").WithUsage(200, 20, 0.002),
	}, nil)
	keys := memstore.NewKeys([]byte("subagent-worker-seed"))
	records := memstore.New(nil) // where the signed records go
	bind := func(s *Store) turn.Bindings {
		b := f.bindings()
		b.Providers = bindings.Providers{provider}
		b.Memory, b.Conversations, b.Snapshots, b.Runs, b.Hitl = s, s, s, s, s
		b.Agents, b.AgentVersions = reg.Lookup, reg.Versions
		b.Provenance = bindings.ProvenanceBindings{Emitter: records, Keys: keys}
		return b
	}
	ctx := t.Context()
	conv := f.open(t, parent)
	res, err := turn.Invoke(ctx, turn.Input{TenantID: turnTenant, Agent: parent, ConversationID: conv, UserMessage: "What is the answer?"}, bind(f.store))
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if res.Status != turn.StatusSuspended || len(res.Approvals) != 1 || res.Approvals[0].ToolID != "acme.lookup" || !strings.HasPrefix(res.Approvals[0].RunID, res.RunID+"/") {
		t.Fatalf("parent %s with approvals %+v, want suspended with the child's", res.Status, res.Approvals)
	}
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
