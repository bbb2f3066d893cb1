package pgstore

import (
	"strings"
	"testing"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
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
	f := newTurnFixture(t, New(pool, nil))
	child := lookupAgent(t, agent.GateAlwaysAsk)
	spec := agent.Spec{
		ID: "acme.parent", Version: "1.0.0", Name: "Parent", Instructions: "You delegate.",
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		SubAgents:    []agent.AgentRef{{ID: child.ID, Version: "^1.0.0", Name: "lookup_agent"}},
	}
	parent, err := agent.Define(spec)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.NewAgents(parent, child)
	if err != nil {
		t.Fatal(err)
	}
	script := []scripted.Response{
		scripted.Call("call_1", "lookup_agent", map[string]any{"message": "Look the answer up."}).WithUsage(100, 10, 0.001),
		scripted.Call("c_1", "acme.lookup", map[string]any{"q": "answer"}).WithUsage(40, 4, 0.0004),
		scripted.Say("42.").WithUsage(30, 3, 0.0003),
		scripted.Say("The answer is 42.").WithUsage(200, 20, 0.002),
	}
	provider := scripted.New(script, nil)
	bind := func(s *Store) turn.Bindings {
		b := f.bindings()
		b.Providers = bindings.Providers{provider}
		b.Memory, b.Conversations, b.Snapshots, b.Runs, b.Hitl = s, s, s, s, s
		b.Agents, b.AgentVersions = reg.Lookup, reg.Versions
		return b
	}
	conv := f.open(t, parent)
	res, err := turn.Invoke(t.Context(), turn.Input{TenantID: turnTenant, Agent: parent, ConversationID: conv, UserMessage: "What is the answer?"}, bind(f.store))
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if res.Status != turn.StatusSuspended || len(res.Approvals) != 1 || !strings.HasPrefix(res.Approvals[0].RunID, res.RunID+"/") {
		t.Fatalf("parent %s with approvals %+v, want suspended with the child's", res.Status, res.Approvals)
	}
	if n := f.executed.Load(); n != 0 {
		t.Fatalf("the tool ran %d times before the decision", n)
	}
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
