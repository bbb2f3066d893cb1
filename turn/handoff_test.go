package turn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/journaltest"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

var refundSchema = json.RawMessage(`{"type":"object","properties":{"invoice":{"type":"string"}},"required":["invoice"],"additionalProperties":false}`)

// billingDesk is a handoff target: its instructions use the turn's
// firmName and its own currency parameter (defaulted), and its refund
// tool always asks for approval. edit changes the spec before Define.
func billingDesk(t testing.TB, edit func(*agent.Spec)) agent.Agent {
	usd := "USD"
	spec := agent.Spec{
		ID: "acme.billing", Version: "1.0.0", Name: "Billing", Description: "answers billing questions",
		Instructions: "You are the billing desk of {{ firmName }}; amounts are in {{ currency }}.",
		Capabilities: toolUse,
		Parameters:   []agent.PromptParameter{{Name: "firmName", Type: agent.TypeString}, {Name: "currency", Type: agent.TypeString, Default: usd}},
		Tools:        []agent.ToolRef{{ID: "acme.refund", Version: "^1.0.0"}},
		ConversationPolicy: &agent.ConversationPolicy{Hitl: &agent.HitlPolicy{Tools: &agent.ToolGates{Overrides: map[string]agent.ToolGate{
			"acme.refund": {Mode: agent.GateAlwaysAsk},
		}}}},
	}
	if edit != nil {
		edit(&spec)
	}
	return defineAgent(t, spec)
}

const billingPrompt = "You are the billing desk of Acme LLP; amounts are in USD."

// newHandoffFixture is the drafter with a handoff (tool "to_billing") to
// target, resolvable through a registry of both, and the refund tool.
func newHandoffFixture(t *testing.T, script []scripted.Response, target agent.Agent, more ...agent.Agent) *subFixture {
	t.Helper()
	f := newSubFixture(t, script, func(s *agent.Spec) {
		s.Handoffs = []agent.AgentRef{{ID: target.ID, Version: "1.x", Name: "to_billing"}}
	}, append([]agent.Agent{target}, more...)...)
	f.addTool("acme.refund", "1.0.2", refundSchema, func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
		return json.RawMessage(`{"refunded":true}`), nil
	})
	return f
}

func handOver(id string) scripted.Response {
	return scripted.Call(id, "to_billing", map[string]any{"message": "A refund question."}).WithUsage(100, 10, 0.001)
}

// toolNames are the names of the tools a request offered.
func toolNames(req bindings.GenerateRequest) []string {
	var out []string
	for _, d := range req.Tools {
		out = append(out, d.Name)
	}
	return out
}

// checkAnsweredBy checks that the billing desk answered: Result.AgentID
// and AgentVersion, the final message's metadata, the provenance record
// (the run's own agent, the handoff, who answered; it verifies).
func checkAnsweredBy(t *testing.T, f *subFixture, res turn.Result, content string) {
	t.Helper()
	if res.Status != turn.StatusCompleted || res.Response.Content != content {
		t.Fatalf("result %s %q, want completed %q", res.Status, res.Response.Content, content)
	}
	if res.AgentID != "acme.billing" || res.AgentVersion != "1.0.0" {
		t.Errorf("Result agent %s@%s, want acme.billing@1.0.0", res.AgentID, res.AgentVersion)
	}
	var final *bindings.ConversationMessage
	for _, m := range f.messages() {
		if m.ID == res.Response.MessageID {
			final = &m
		}
	}
	if final == nil {
		t.Fatalf("final message %s not stored", res.Response.MessageID)
	}
	var meta turn.AnswererMeta
	if err := json.Unmarshal(final.Metadata, &meta); err != nil || meta.AgentID != "acme.billing" || meta.AgentVersion != "1.0.0" {
		t.Errorf("final message metadata %s (%v), want the billing desk", final.Metadata, err)
	}
	p := res.Provenance
	if p == nil {
		t.Fatal("no provenance record")
	}
	if p.AgentID != f.agent.ID || p.AnsweredBy != "acme.billing@1.0.0" || len(p.Handoffs) != 1 {
		t.Fatalf("provenance agent %s, answered by %q, handoffs %+v", p.AgentID, p.AnsweredBy, p.Handoffs)
	}
	if h := p.Handoffs[0]; h.FromAgentID != f.agent.ID || h.AgentID != "acme.billing" || h.ToolCallID != "h_1" || h.PromptHash == "" {
		t.Errorf("provenance handoff %+v", h)
	}
	if err := turn.VerifyProvenance(t.Context(), *p, f.keys); err != nil {
		t.Errorf("VerifyProvenance: %v", err)
	}
}

// TestHandoffAnswerFromTarget: after the handoff call the model is driven
// as the target — its instructions (the turn's parameters, its own
// defaults) as the system message, its tools, the conversation so far and
// the handoff's result — and the answer is recorded as the target's.
func TestHandoffAnswerFromTarget(t *testing.T) {
	f := newHandoffFixture(t, []scripted.Response{
		handOver("h_1"),
		scripted.Say("Billing here: invoice 42 is paid.").WithUsage(200, 20, 0.002),
	}, billingDesk(t, nil))
	const question = "Was invoice 42 for the mutual confidentiality review paid?"
	res := f.mustInvoke(t, f.bindings(), question)
	checkAnsweredBy(t, f, res, "Billing here: invoice 42 is paid.")
	reqs := f.provider.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	first, second := reqs[0], reqs[1]
	if got := toolNames(first); !strings.Contains(strings.Join(got, ","), "to_billing") || !strings.Contains(strings.Join(got, ","), "acme.clause-search") {
		t.Errorf("first call's tools %v, want the drafter's with the handoff", got)
	}
	if got := toolNames(second); len(got) != 1 || got[0] != "acme.refund" {
		t.Errorf("second call's tools %v, want the billing desk's", got)
	}
	if !strings.Contains(first.Messages[0].Content, "C-7") {
		t.Fatalf("first call's system message %q holds no retrieved fact", first.Messages[0].Content)
	}
	sys := second.Messages[0]
	if sys.Role != bindings.ChatSystem || !strings.HasPrefix(sys.Content, billingPrompt) || !strings.Contains(sys.Content, "C-7") {
		t.Errorf("second call's system message %q, want the billing prompt with the retrieved facts", sys.Content)
	}
	if strings.Contains(sys.Content, "draft contract clauses") {
		t.Errorf("the drafter's instructions are still sent: %q", sys.Content)
	}
	// The conversation carries over: the user message, the handoff call
	// and its result.
	n := len(second.Messages)
	if n < 4 || second.Messages[n-1].Role != bindings.ChatTool || !strings.Contains(second.Messages[n-1].Content, `"handoff":"acme.billing@1.0.0"`) ||
		second.Messages[n-2].Role != bindings.ChatAssistant || len(second.Messages[n-2].ToolCalls) != 1 || second.Messages[n-3].Content != question {
		t.Errorf("second call's messages do not carry the turn over: %+v", second.Messages[1:])
	}
	if res.Usage.ModelCalls != 2 || res.Usage.ToolCalls != 1 {
		t.Errorf("usage %+v", res.Usage)
	}
	// Folding the finished run gives the same result, calling nothing.
	again, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID}, f.bindings())
	if err != nil {
		t.Fatalf("Resume of the finished run: %v", err)
	}
	checkAnsweredBy(t, f, again, "Billing here: invoice 42 is paid.")
	if f.provider.Calls() != 2 {
		t.Errorf("the fold called the model: %d calls", f.provider.Calls())
	}
}

// TestNoHandoffAnsweredByOwnAgent: a turn without handoffs names its own
// agent in the Result, and its final message carries no metadata (its
// bytes are as before).
func TestNoHandoffAnsweredByOwnAgent(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), nil)
	res := f.mustInvoke(t, f.bindings(), "Find a confidentiality clause.")
	if res.AgentID != f.agent.ID || res.AgentVersion != f.agent.Version {
		t.Errorf("Result agent %s@%s, want the turn's", res.AgentID, res.AgentVersion)
	}
	ms := f.messages()
	if last := ms[len(ms)-1]; last.Metadata != nil {
		t.Errorf("final message metadata %s, want none", last.Metadata)
	}
	if p := res.Provenance; p == nil || p.AnsweredBy != "" || p.Handoffs != nil || p.SubRuns != nil {
		t.Errorf("provenance %+v, want no handoffs nor children", p)
	}
}

// TestHandoffTargetGatedToolParksAndResumes: the target's gated tool parks
// the turn; Resume in another process continues as the target (its tools,
// its gate) and the tool runs once.
func TestHandoffTargetGatedToolParksAndResumes(t *testing.T) {
	f := newHandoffFixture(t, []scripted.Response{
		handOver("h_1"),
		scripted.Call("r_1", "acme.refund", map[string]any{"invoice": "42"}).WithUsage(150, 15, 0.0015),
		scripted.Say("Refunded invoice 42.").WithUsage(200, 20, 0.002),
	}, billingDesk(t, nil))
	res := f.mustInvoke(t, f.bindings(), "Refund invoice 42.")
	if res.Status != turn.StatusSuspended || len(res.Approvals) != 1 || res.Approvals[0].ToolID != "acme.refund" {
		t.Fatalf("result %s, approvals %+v; want suspended on the refund", res.Status, res.Approvals)
	}
	if res.AgentID != "acme.billing" {
		t.Errorf("suspended Result agent %s, want the billing desk driving", res.AgentID)
	}
	if f.log.count("acme.refund") != 0 {
		t.Fatal("the refund ran before its approval")
	}
	f.decide(res.Approvals, true)
	done, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID}, f.bindings())
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	checkAnsweredBy(t, f, done, "Refunded invoice 42.")
	if n := f.log.count("acme.refund"); n != 1 {
		t.Errorf("the refund ran %d times, want once", n)
	}
	reqs := f.provider.Requests()
	if len(reqs) != 3 || !strings.HasPrefix(reqs[2].Messages[0].Content, billingPrompt) {
		t.Errorf("the resumed call was not made as the billing desk: %d calls", len(reqs))
	}
}

// TestHandoffDepthBound: a handoff past Bindings.MaxAgentDepth is refused
// with agent-depth-exceeded as the call's error, and nothing switches.
func TestHandoffDepthBound(t *testing.T) {
	var f *subFixture
	// The billing desk may hand the turn back to the drafter: the second
	// handoff would be at depth 2.
	back := billingDesk(t, func(s *agent.Spec) {
		s.Handoffs = []agent.AgentRef{{ID: "acme.contract-drafter", Version: "^1.0.0", Name: "to_drafter"}}
	})
	f = newHandoffFixture(t, []scripted.Response{
		handOver("h_1"),
		scripted.Call("h_2", "to_drafter", map[string]any{}),
		scripted.Say("I will keep helping with billing."),
	}, back)
	b := f.bindings()
	b.MaxAgentDepth = 1
	res := f.mustInvoke(t, b, "Was invoice 42 paid?")
	if res.AgentID != "acme.billing" || res.Response.Content != "I will keep helping with billing." {
		t.Fatalf("answered by %s: %q", res.AgentID, res.Response.Content)
	}
	var refused bool
	for _, m := range f.toolMessages(f.conv.ID) {
		if m.ToolCallID == "h_2" {
			refused = strings.Contains(m.Content, agents.CodeAgentDepthExceeded)
		}
	}
	if !refused {
		t.Error("the handoff past the bound was not answered with agent-depth-exceeded")
	}
	reqs := f.provider.Requests()
	if got := toolNames(reqs[2]); len(got) != 2 || got[0] != "acme.refund" {
		t.Errorf("after the refused handoff the tools are %v, want the billing desk's", got)
	}
	if p := res.Provenance; p == nil || len(p.Handoffs) != 1 {
		t.Errorf("provenance handoffs %+v, want the one that happened", p)
	}
}

// TestHandoffMissingParameter: a target requiring a prompt parameter the
// turn lacks (and has no default for) is the call's missing-parameter
// error, journaled; the turn goes on as its own agent.
func TestHandoffMissingParameter(t *testing.T) {
	needy := billingDesk(t, func(s *agent.Spec) {
		s.Instructions += " Account {{ accountId }}."
		s.Parameters = append(s.Parameters, agent.PromptParameter{Name: "accountId", Type: agent.TypeString})
	})
	f := newHandoffFixture(t, []scripted.Response{
		handOver("h_1"),
		scripted.Say("I could not reach billing; the drafter answers."),
	}, needy)
	res := f.mustInvoke(t, f.bindings(), "Was invoice 42 paid?")
	if res.AgentID != f.agent.ID {
		t.Errorf("answered by %s, want the drafter", res.AgentID)
	}
	var content string
	for _, m := range f.toolMessages(f.conv.ID) {
		if m.ToolCallID == "h_1" {
			content = m.Content
		}
	}
	if !strings.Contains(content, agents.CodeMissingParameter) || !strings.Contains(content, "accountId") {
		t.Errorf("handoff result %q, want missing-parameter naming accountId", content)
	}
	var journaled bool
	for _, e := range f.journal(res.RunID) {
		if e.Key == "agent-loop/1/dispatch-tools/h_1" && strings.Contains(string(e.Output), agents.CodeMissingParameter) {
			journaled = true
		}
	}
	if !journaled {
		t.Error("the refused handoff is not journaled")
	}
	if got := toolNames(f.provider.Requests()[1]); len(got) == 0 || got[0] != "acme.clause-search" {
		t.Errorf("after the refused handoff the tools are %v, want the drafter's", got)
	}
}

// handoffProvider answers by the model call's step key and records, per
// key, the system prompt and tools each call was made with.
type handoffProvider struct {
	keyedProvider
	mu     sync.Mutex
	system map[string]string
	tools  map[string][]string
}

func (p *handoffProvider) Generate(ctx context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	key := strings.TrimPrefix(req.RequestID, req.RunID+"/")
	p.mu.Lock()
	p.system[key], p.tools[key] = req.Messages[0].Content, toolNames(req)
	p.mu.Unlock()
	return p.keyedProvider.Generate(ctx, req)
}

func newHandoffProvider() *handoffProvider {
	return &handoffProvider{system: map[string]string{}, tools: map[string][]string{}, keyedProvider: keyedProvider{Calls: map[string]int{}, Answers: map[string]bindings.GenerateResponse{
		"agent-loop/1/model-call": {ToolCalls: []bindings.ToolCall{{ID: "h_1", Name: "to_billing", Arguments: json.RawMessage(`{"message":"refund"}`)}}, Usage: bindings.Usage{InputTokens: 100, OutputTokens: 10, CostUsd: 0.001}},
		"agent-loop/2/model-call": {ToolCalls: []bindings.ToolCall{{ID: "r_1", Name: "acme.refund", Arguments: json.RawMessage(`{"invoice":"42"}`)}}, Usage: bindings.Usage{InputTokens: 150, OutputTokens: 15, CostUsd: 0.0015}},
		"agent-loop/3/model-call": {Text: "Refunded invoice 42.", Usage: bindings.Usage{InputTokens: 200, OutputTokens: 20, CostUsd: 0.002}},
	}}}
}

const handoffRunID = "run-handoff"

// runHandoffCrash runs the handoff scenario (hand over, the target's gated
// refund, the answer) crashing after allowed writes (never when
// negative), then drives it from fresh bindings until it completes.
func runHandoffCrash(t *testing.T, allowed int, panics bool) crashOutcome {
	t.Helper()
	f := newHandoffFixture(t, nil, billingDesk(t, nil))
	f.addTool("acme.refund", "1.0.3", refundSchema, func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
		return json.RawMessage(`{"refunded":true}`), nil
	})
	hp := newHandoffProvider()
	d := crashDrive{
		f: f.fixture, b: f.bindings(), provider: hp, msg: "Refund invoice 42.", runID: handoffRunID,
		approvalID: handoffRunID + "/agent-loop/2/dispatch-tools/r_1/approval",
	}
	out := d.run(t, allowed, panics, false)
	res, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: handoffRunID}, d.fresh()) // the stored result, in full
	if err != nil {
		t.Fatalf("allowed %d: Resume of the finished run: %v", allowed, err)
	}
	checkAnsweredBy(t, f, res, "Refunded invoice 42.")
	for _, key := range []string{"agent-loop/2/model-call", "agent-loop/3/model-call"} {
		if !strings.HasPrefix(hp.system[key], billingPrompt) || len(hp.tools[key]) != 1 || hp.tools[key][0] != "acme.refund" {
			t.Errorf("allowed %d: %s was made with system %q and tools %v, want the billing desk's", allowed, key, hp.system[key], hp.tools[key])
		}
	}
	return out
}

// TestHandoffCrashAtEveryWrite: a crash at every write of a turn that hands
// over (before, at and after the handoff step, and at the target's park)
// resumes as the target and ends exactly as the uninterrupted turn: same
// conversation, result and journal, the refund run once.
func TestHandoffCrashAtEveryWrite(t *testing.T) {
	base := runHandoffCrash(t, -1, false)
	if base.result.Status != turn.StatusCompleted || base.drives != 2 {
		t.Fatalf("baseline: %+v after %d drives", base.result, base.drives)
	}
	t.Logf("baseline: %d writes, %d journal entries", base.writes, len(base.journal))
	crashAtEveryWrite(base.writes, func(mode string, n int, panics bool) {
		got := runHandoffCrash(t, n, panics)
		journaltest.CheckAgainstBaseline(t, mode, n, handoffRunID, base.outcome(), got.outcome())
	})
}

// TestHandoffWorkerContinuesAsTarget: after the target's approval is
// decided, a Worker (no Resume call) finishes the turn as the target.
func TestHandoffWorkerContinuesAsTarget(t *testing.T) {
	f := newHandoffFixture(t, []scripted.Response{
		handOver("h_1"),
		scripted.Call("r_1", "acme.refund", map[string]any{"invoice": "42"}),
		scripted.Say("Refunded invoice 42."),
	}, billingDesk(t, nil))
	f.clock.useWall()
	b := f.bindings()
	b.OnEvent = nil
	res := f.park(t, b, "Refund invoice 42.")
	f.decide(res.Approvals, true)
	workUntil(t, b, turn.WorkerOptions{MaxConcurrent: 1, PollInterval: 5 * time.Millisecond},
		func() bool { return f.run(res.RunID).Status == bindings.RunCompleted },
		func() string { return fmt.Sprintf("the run did not finish: %s", f.run(res.RunID).Status) })
	done, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID}, b) // the stored result
	if err != nil {
		t.Fatalf("Resume of the finished run: %v", err)
	}
	checkAnsweredBy(t, f, done, "Refunded invoice 42.")
	if n := f.log.count("acme.refund"); n != 1 {
		t.Errorf("the refund ran %d times, want once", n)
	}
}
