package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// mailerAgent is a sub-agent that may send email, always after approval.
func mailerAgent(t testing.TB) agent.Agent {
	return defineAgent(t, agent.Spec{
		ID: "acme.mailer", Version: "1.0.0", Name: "Mailer", Description: "sends the emails it is asked to",
		Instructions: "You send emails.", Capabilities: toolUse,
		Tools: []agent.ToolRef{{ID: "acme.send-email", Version: "~2.1.0"}},
		ConversationPolicy: &agent.ConversationPolicy{Hitl: &agent.HitlPolicy{Tools: &agent.ToolGates{Overrides: map[string]agent.ToolGate{
			"acme.send-email": {Mode: agent.GateAlwaysAsk},
		}}}},
	})
}

// subFixture is the drafter with the sub-agents of as, resolvable through
// a registry of them.
type subFixture struct {
	*fixture
	reg *registry.Agents
}

func newSubFixture(t *testing.T, script []scripted.Response, edit func(*agent.Spec), as ...agent.Agent) *subFixture {
	t.Helper()
	f := newFixture(t, script, func(s *agent.Spec) {
		for _, a := range as {
			s.SubAgents = append(s.SubAgents, agent.AgentRef{ID: a.ID, Version: "^" + a.Version})
		}
		if edit != nil {
			edit(s)
		}
	})
	return &subFixture{fixture: f, reg: agentRegistry(t, append(as, f.agent)...)}
}

// bindings are the fixture's, with the agent registry bound.
func (f *subFixture) bindings() turn.Bindings {
	b := f.fixture.bindings()
	b.Agents, b.AgentVersions = f.reg.Lookup, f.reg.Versions
	return b
}

// run reads a run from the store.
func (f *subFixture) run(id string) bindings.Run {
	f.t.Helper()
	r, err := f.store.GetRun(context.Background(), tenant, id)
	if err != nil {
		f.t.Fatalf("GetRun %s: %v", id, err)
	}
	return r
}

// toolMessages returns the tool messages of a conversation.
func (f *subFixture) toolMessages(convID string) []bindings.ConversationMessage {
	f.t.Helper()
	ms, err := f.store.ReadMessages(context.Background(), bindings.ReadMessagesInput{TenantID: tenant, ConversationID: convID, Limit: -1})
	if err != nil {
		f.t.Fatalf("ReadMessages: %v", err)
	}
	var out []bindings.ConversationMessage
	for _, m := range ms {
		if m.Role == bindings.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

// askResearch is the parent's call of the research sub-agent.
func askResearch(id string) scripted.Response {
	return scripted.Call(id, "acme.research", map[string]any{"message": "Find NDA case law.", "topic": "NDAs"}).WithUsage(100, 10, 0.001)
}

// researchFixture is the drafter with the research sub-agent, scripted for
// one call of it: the parent asks it once, it answers "Three cases found."
// and the parent answers from that, each call with its usage.
func researchFixture(t *testing.T) *subFixture {
	t.Helper()
	return newSubFixture(t, []scripted.Response{
		askResearch("call_1"),
		scripted.Say("Three cases found.").WithUsage(50, 5, 0.0005),
		scripted.Say("The research found three cases.").WithUsage(200, 20, 0.002),
	}, nil, researchAgent(t, "1.0.0", "finds case law"))
}

// TestSubAgentCallIsAChildRun: the call runs the child agent as a run of
// its own — id derived from the parent's, its own conversation, parent
// and step recorded on it, the call's message as its user message and the
// other arguments as its parameters — whose answer is the call's result;
// Result.SubRuns lists it, and its usage is in the parent's.
func TestSubAgentCallIsAChildRun(t *testing.T) {
	f := researchFixture(t)
	res := f.mustInvoke(t, f.bindings(), "Research NDAs.")
	if res.Status != turn.StatusCompleted || res.Response.Content != "The research found three cases." {
		t.Fatalf("result %s %q", res.Status, res.Response.Content)
	}
	if len(res.SubRuns) != 1 {
		t.Fatalf("SubRuns %+v, want one", res.SubRuns)
	}
	sr := res.SubRuns[0]
	if sr.AgentID != "acme.research" || sr.AgentVersion != "1.0.0" || sr.Status != turn.StatusCompleted || sr.Usage.ModelCalls != 1 || sr.Usage.CostUsd != 0.0005 {
		t.Errorf("sub-run %+v", sr)
	}
	if !strings.HasPrefix(sr.RunID, res.RunID+"/") {
		t.Errorf("child run id %q is not derived from the parent's %q", sr.RunID, res.RunID)
	}
	if res.Usage.ModelCalls != 3 || res.Usage.InputTokens != 350 || res.Usage.ToolCalls != 1 {
		t.Errorf("parent usage %+v, want its own two calls and the child's one", res.Usage)
	}
	child := f.run(sr.RunID)
	if child.ParentRunID != res.RunID || child.ParentStepKey != "agent-loop/1/dispatch-tools/call_1" || child.Status != bindings.RunCompleted {
		t.Errorf("child run %+v", child)
	}
	reqs := f.provider.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls, want 3", len(reqs))
	}
	// The child's request: its own instructions, rendered with the call's
	// parameter, and the call's message as the user message.
	creq := reqs[1]
	if !strings.Contains(creq.Messages[0].Content, "You research NDAs") || creq.Messages[len(creq.Messages)-1].Content != "Find NDA case law." {
		t.Errorf("child request messages %+v", creq.Messages)
	}
	if creq.RunID != sr.RunID {
		t.Errorf("child request run %q", creq.RunID)
	}
	tool := f.toolMessages(f.conv.ID)
	if len(tool) != 1 || !strings.Contains(tool[0].Content, `"answer":"Three cases found."`) {
		t.Fatalf("parent tool messages %+v", tool)
	}
	snap, err := f.store.Read(t.Context(), tenant, sr.RunID)
	if err != nil {
		t.Fatalf("child snapshot: %v", err)
	}
	if snap.ConversationID == f.conv.ID || snap.AgentID != "acme.research" {
		t.Errorf("child snapshot %+v", snap)
	}
	// Its events reach the parent's OnEvent, with the child's run id.
	var childStarted bool
	for _, e := range f.events.events {
		if s, ok := e.(turn.TurnStartedEvent); ok && s.RunID == sr.RunID {
			childStarted = true
		}
	}
	if !childStarted {
		t.Error("no turn.started event of the child run")
	}
	// Invoking the parent again replays everything: nothing is called.
	again, err := turn.Invoke(t.Context(), func() turn.Input { in := f.input("Research NDAs."); in.RunID = res.RunID; return in }(), f.bindings())
	if err != nil || len(again.SubRuns) != 1 || again.Usage != res.Usage {
		t.Fatalf("replay: %v, %+v", err, again)
	}
	if f.provider.Calls() != 3 {
		t.Errorf("replay called the model: %d calls", f.provider.Calls())
	}
}

// gatedTree is a parent whose mailer sub-agent's email tool always asks:
// the parent calls the mailer, the mailer calls the tool.
func gatedTree(t *testing.T) *subFixture {
	return newSubFixture(t, []scripted.Response{
		scripted.Call("call_1", "acme.mailer", map[string]any{"message": "Send the NDA to legal."}).WithUsage(100, 10, 0.001),
		scripted.Call("m_1", "acme.send-email", map[string]any{"to": "legal@globex.test", "subject": "NDA", "body": "Attached."}).WithUsage(40, 4, 0.0004),
		scripted.Say("Sent.").WithUsage(30, 3, 0.0003),
		scripted.Say("The mailer sent the NDA.").WithUsage(200, 20, 0.002),
	}, nil, mailerAgent(t))
}

// suspendOnChild runs the gated tree's first drive: the parent is
// suspended with the child's approval.
func suspendOnChild(t *testing.T, f *subFixture) turn.Result {
	t.Helper()
	res := f.mustInvoke(t, f.bindings(), "Send the NDA.")
	if res.Status != turn.StatusSuspended || len(res.Approvals) != 1 {
		t.Fatalf("parent %s with %d approvals, want suspended with the child's one", res.Status, len(res.Approvals))
	}
	a := res.Approvals[0]
	if a.RunID == res.RunID || !strings.HasPrefix(a.RunID, res.RunID+"/") || a.ToolID != "acme.send-email" {
		t.Fatalf("approval %+v, want the child's", a)
	}
	if st := f.run(res.RunID).Status; st != bindings.RunSuspended {
		t.Fatalf("parent run %s", st)
	}
	if st := f.run(a.RunID).Status; st != bindings.RunSuspended {
		t.Fatalf("child run %s", st)
	}
	if n := f.log.count("acme.send-email"); n != 0 {
		t.Fatalf("the gated tool ran %d times before the decision", n)
	}
	return res
}

// checkTreeDone checks the finished tree: the tool ran once, the parent
// answered, its usage covers the child's.
func checkTreeDone(t *testing.T, f *subFixture, res turn.Result) {
	t.Helper()
	if n := f.log.count("acme.send-email"); n != 1 {
		t.Errorf("the gated tool ran %d times, want once", n)
	}
	if res.Status != turn.StatusCompleted || res.Response.Content != "The mailer sent the NDA." {
		t.Fatalf("parent result %s %q", res.Status, res.Response.Content)
	}
	if len(res.SubRuns) != 1 || res.SubRuns[0].Status != turn.StatusCompleted {
		t.Fatalf("SubRuns %+v", res.SubRuns)
	}
	cu, pu := res.SubRuns[0].Usage, res.Usage
	if pu.ModelCalls < cu.ModelCalls || pu.CostUsd < cu.CostUsd || pu.InputTokens < cu.InputTokens || cu.ModelCalls != 2 || cu.ToolCalls != 1 {
		t.Errorf("parent usage %+v, child usage %+v", pu, cu)
	}
	if f.provider.Calls() != 4 {
		t.Errorf("%d model calls, want 4", f.provider.Calls())
	}
}

// TestChildApprovalSuspendsParentResume: Resume of the parent in another
// process (new bindings over the same store) drives the child past its
// decided approval, then the parent.
func TestChildApprovalSuspendsParentResume(t *testing.T) {
	f := gatedTree(t)
	res := suspendOnChild(t, f)
	// Still pending: Resume runs nothing.
	if _, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID}, f.bindings()); agents.CodeOf(err) != agents.CodeHitlRequired {
		t.Fatalf("Resume before the decision: %v, want hitl-required", err)
	}
	if f.provider.Calls() != 2 || f.run(res.RunID).Status != bindings.RunSuspended {
		t.Fatalf("Resume before the decision called the model or left the parent %s", f.run(res.RunID).Status)
	}
	f.decide(res.Approvals, true)
	other := f.bindings() // another process: fresh bindings, same store
	done, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID}, other)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	checkTreeDone(t, f, done)
	if st := f.run(res.Approvals[0].RunID).Status; st != bindings.RunCompleted {
		t.Errorf("child run %s", st)
	}
}

// TestChildApprovalWorkerFinishesTree: after the decision a Worker, with no
// Resume call, finishes the child, then the parent (claimable once its
// child ended).
func TestChildApprovalWorkerFinishesTree(t *testing.T) {
	f := gatedTree(t)
	f.clock.useWall()
	res := suspendOnChild(t, f)
	b := f.bindings()
	b.OnEvent = nil
	// Before the decision nothing of the tree is claimable.
	if runs, err := f.store.ClaimRuns(t.Context(), bindings.ClaimRunsInput{Owner: "probe", LeaseTTL: time.Second, Limit: 10}); err != nil || len(runs) != 0 {
		t.Fatalf("claimed before the decision: %v %+v", err, runs)
	}
	f.decide(res.Approvals, true)
	var order []string
	workUntil(t, b, turn.WorkerOptions{MaxConcurrent: 1, PollInterval: 5 * time.Millisecond, OnRun: func(run bindings.Run, _ turn.Result, _ error) {
		order = append(order, run.ID)
	}}, func() bool { return f.run(res.RunID).Status == bindings.RunCompleted }, func() string {
		return fmt.Sprintf("the parent did not finish: parent %s, child %s", f.run(res.RunID).Status, f.run(res.Approvals[0].RunID).Status)
	})
	if len(order) < 2 || order[0] != res.Approvals[0].RunID || order[len(order)-1] != res.RunID {
		t.Errorf("worker drove %v, want the child, then the parent", order)
	}
	done, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID}, b) // the stored result
	if err != nil {
		t.Fatalf("Resume of the finished parent: %v", err)
	}
	checkTreeDone(t, f, done)
}

// TestSubAgentDepthBound: a call past Bindings.MaxAgentDepth is answered
// with agent-depth-exceeded and creates no run.
func TestSubAgentDepthBound(t *testing.T) {
	recursive := func(s *agent.Spec) {
		s.SubAgents = []agent.AgentRef{{ID: "acme.research", Version: "^1.0.0"}}
	}
	research := researchAgent(t, "1.0.0", "finds case law")
	spec := agent.Spec{
		ID: research.ID, Version: research.Version, Name: research.Name, Description: research.Description,
		Instructions: research.Instructions, Parameters: research.Parameters, Capabilities: toolUse,
	}
	recursive(&spec)
	research = defineAgent(t, spec)
	f := newSubFixture(t, []scripted.Response{
		askResearch("call_1"),
		askResearch("deeper"),
		scripted.Say("I could not go deeper.").WithUsage(10, 1, 0),
		scripted.Say("Done.").WithUsage(10, 1, 0),
	}, nil, research)
	b := f.bindings()
	b.MaxAgentDepth = 1
	res, err := turn.Invoke(t.Context(), f.input("Research."), b)
	if err != nil || res.Status != turn.StatusCompleted {
		t.Fatalf("Invoke: %v %s", err, res.Status)
	}
	child := res.SubRuns[0].RunID
	snap, err := f.store.Read(t.Context(), tenant, child)
	if err != nil {
		t.Fatalf("child snapshot: %v", err)
	}
	tool := f.toolMessages(snap.ConversationID)
	if len(tool) != 1 || !strings.Contains(tool[0].Content, agents.CodeAgentDepthExceeded) {
		t.Fatalf("child's tool messages %+v, want agent-depth-exceeded", tool)
	}
	page, err := f.store.ListRuns(t.Context(), bindings.ListRunsInput{TenantID: tenant})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Runs) != 2 {
		t.Errorf("%d runs, want the parent and the child only", len(page.Runs))
	}
}

// TestSubAgentBudgetCap: a child whose parent has no cost left fails with
// budget-exceeded before its first model call; the model is told the code.
func TestSubAgentBudgetCap(t *testing.T) {
	f := newSubFixture(t, []scripted.Response{
		scripted.Call("call_1", "acme.research", map[string]any{"message": "Find NDA case law.", "topic": "NDAs"}).WithUsage(100, 10, 0.30),
	}, nil, researchAgent(t, "1.0.0", "finds case law"))
	_, err := turn.Invoke(t.Context(), f.input("Research."), f.bindings()) // the drafter's maxCostUsd is 0.25
	if agents.CodeOf(err) != agents.CodeBudgetExceeded {
		t.Fatalf("parent: %v, want budget-exceeded (its own check after the call)", err)
	}
	if n := f.provider.Calls(); n != 1 {
		t.Fatalf("%d model calls, want only the parent's", n)
	}
	tool := f.toolMessages(f.conv.ID)
	if len(tool) != 1 || !strings.Contains(tool[0].Content, agents.CodeBudgetExceeded) {
		t.Fatalf("tool messages %+v, want the child's budget-exceeded", tool)
	}
	var meta struct{ Status string }
	_ = json.Unmarshal(tool[0].Metadata, &meta)
	if meta.Status != "error" {
		t.Errorf("tool status %q", meta.Status)
	}
}

// TestBusyChildParksTheParent: a parent drive that finds its child held by
// another driver calls nothing and parks again (suspended, run-busy naming
// the child) rather than waiting on it; once the child is free, the parent
// goes on.
func TestBusyChildParksTheParent(t *testing.T) {
	f := gatedTree(t)
	res := suspendOnChild(t, f)
	f.decide(res.Approvals, true)
	childID := res.Approvals[0].RunID
	if _, err := f.store.AcquireLease(t.Context(), bindings.LeaseInput{TenantID: tenant, RunID: childID, Owner: "another-driver", TTL: time.Minute}); err != nil {
		t.Fatalf("AcquireLease: %v", err)
	}
	_, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID}, f.bindings())
	var busy *agents.RunBusyError
	if !errorsAs(err, &busy) || busy.RunID != childID {
		t.Fatalf("Resume with the child held: %v, want run-busy naming the child", err)
	}
	if st := f.run(res.RunID).Status; st != bindings.RunSuspended {
		t.Errorf("parent %s, want suspended again", st)
	}
	if f.provider.Calls() != 2 || f.log.count("acme.send-email") != 0 {
		t.Errorf("the busy drive called something: %d model calls, %d tool runs", f.provider.Calls(), f.log.count("acme.send-email"))
	}
	if err := f.store.ReleaseLease(t.Context(), tenant, childID, "another-driver"); err != nil {
		t.Fatal(err)
	}
	done, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID}, f.bindings())
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	checkTreeDone(t, f, done)
}

func errorsAs[T error](err error, target *T) bool { return errors.As(err, target) }

// TestChildEventsReachEvents: turn.Events yields the child run's events,
// each with the child's run id, between the parent's; the last event is
// the parent's own end.
func TestChildEventsReachEvents(t *testing.T) {
	f := researchFixture(t)
	b := f.bindings()
	b.OnEvent = nil
	var runs []string
	var last turn.Event
	for e, err := range turn.Events(t.Context(), f.input("Research NDAs."), b) {
		if err != nil {
			t.Fatalf("Events: %v", err)
		}
		last = e
		if s, ok := e.(turn.TurnStartedEvent); ok {
			runs = append(runs, s.RunID)
		}
	}
	if len(runs) != 2 || !strings.HasPrefix(runs[1], runs[0]+"/") {
		t.Fatalf("turn.started of runs %v, want the parent's then its child's", runs)
	}
	done, ok := last.(turn.TurnCompletedEvent)
	if !ok || done.RunID != runs[0] {
		t.Fatalf("last event %#v, want the parent's turn.completed", last)
	}
}

// TestWaitOnParentParkedOnChild: Wait of a parent parked on its child
// returns the suspended result with the child's approvals; once they are
// decided it waits on, and returns the completed result a driver made.
func TestWaitOnParentParkedOnChild(t *testing.T) {
	f := gatedTree(t)
	res := suspendOnChild(t, f)
	b := f.bindings()
	b.OnEvent = nil
	got, err := turn.Wait(t.Context(), b, tenant, res.RunID)
	if err != nil || got.Status != turn.StatusSuspended || len(got.Approvals) != 1 || got.Approvals[0].ID != res.Approvals[0].ID {
		t.Fatalf("Wait while parked: %+v, %v; want suspended with the child's approval", got, err)
	}
	f.decide(res.Approvals, true)
	// Decided: the tree is about to move on, so Wait waits.
	short, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if r, err := turn.Wait(short, b, tenant, res.RunID); agents.CodeOf(err) != agents.CodeTurnAborted {
		t.Fatalf("Wait after the decision, before any drive: %+v, %v; want it to wait", r.Status, err)
	}
	waited := make(chan turn.Result, 1)
	go func() {
		r, err := turn.Wait(t.Context(), b, tenant, res.RunID)
		if err != nil {
			t.Errorf("Wait: %v", err)
		}
		waited <- r
	}()
	if _, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID}, b); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	select {
	case r := <-waited:
		if r.Status != turn.StatusCompleted || r.Response.Content != "The mailer sent the NDA." {
			t.Errorf("Wait after the decision: %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return once the tree finished")
	}
}
