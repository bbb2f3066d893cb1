package mcp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/mcp"
	"github.com/kindgi/agents/mcp/internal/mcptest"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// turnFixture is a memstore conversation of an agent whose tools are
// those of the test MCP server, tenant acme, prefix t, in process.
type turnFixture struct {
	agent agent.Agent
	b     turn.Bindings
	store *memstore.Store
	conv  string
	model *scripted.Provider
}

func newTurnFixture(t *testing.T, opts mcp.Options, policy *agent.ConversationPolicy, tools []agent.ToolRef, script ...scripted.Response) turnFixture {
	t.Helper()
	src := inProcess(t, mcptest.Config{Version: "1.2.0"}, opts)
	a, err := agent.Define(agent.Spec{
		ID: "acme.assistant", Version: "1.0.0", Name: "Assistant", Instructions: "You help.",
		Capabilities:       []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		Tools:              tools,
		ConversationPolicy: policy,
	})
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New(nil)
	conv, err := store.OpenConversation(t.Context(), bindings.OpenConversationInput{TenantID: "acme", AgentID: a.ID, AgentVersion: a.Version})
	if err != nil {
		t.Fatal(err)
	}
	model := scripted.New(script, &scripted.Options{Fatal: t})
	return turnFixture{
		agent: a, store: store, conv: conv.ID, model: model,
		b: turn.Bindings{Providers: bindings.Providers{model}, Tools: src, Conversations: store, Snapshots: store, Runs: store, Hitl: store},
	}
}

func (f turnFixture) invoke(t *testing.T, msg string) turn.Result {
	t.Helper()
	res, err := turn.Invoke(t.Context(), turn.Input{TenantID: "acme", Agent: f.agent, ConversationID: f.conv, UserMessage: msg}, f.b)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// toolMessages are the tool messages a result stored.
func toolMessages(res turn.Result) []bindings.ConversationMessage {
	var out []bindings.ConversationMessage
	for _, m := range res.Appended {
		if m.Role == bindings.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

// TestTurnCallsMCPTool: a full turn on memstore resolves the agent's MCP
// tool, calls it with the step's request id in _meta, stores its
// structured output and hands it to the model; an isError result is told
// to the model and the turn completes.
func TestTurnCallsMCPTool(t *testing.T) {
	f := newTurnFixture(t, mcp.Options{}, nil,
		[]agent.ToolRef{{ID: "t.echo", Version: "^1.0.0"}, {ID: "t.fail", Version: "^1.2.0"}},
		scripted.Call("call_1", "t.echo", map[string]string{"text": "hello"}),
		scripted.Call("call_2", "t.fail", map[string]string{"text": "x"}),
		scripted.Say("Echoed hello; fail failed."),
	)
	res := f.invoke(t, "Echo hello, then try fail.")
	if res.Status != turn.StatusCompleted || res.Response.Content != "Echoed hello; fail failed." {
		t.Fatalf("result %s %q", res.Status, res.Response.Content)
	}
	msgs := toolMessages(res)
	if len(msgs) != 2 {
		t.Fatalf("%d tool messages, want 2", len(msgs))
	}
	var echoed mcptest.EchoOut
	if err := json.Unmarshal([]byte(msgs[0].Content), &echoed); err != nil {
		t.Fatalf("echo message %q: %v", msgs[0].Content, err)
	}
	if echoed.Text != "hello" || !strings.HasPrefix(echoed.RequestID, res.RunID+"/") || !strings.HasSuffix(echoed.RequestID, "/dispatch-tools/call_1") {
		t.Errorf("echo output %+v: want the text and the step's request id (run %s)", echoed, res.RunID)
	}
	if !strings.Contains(msgs[1].Content, "fail: nothing works") || !strings.Contains(msgs[1].Content, `"error"`) {
		t.Errorf("fail message %q: want the tool's error told to the model", msgs[1].Content)
	}
	reqs := f.model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls, want 3", len(reqs))
	}
	var names []string
	for _, tool := range reqs[0].Tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "t.echo,t.fail" {
		t.Errorf("tools offered to the model: %v", names)
	}
}

// TestTurnDestructiveGate: with Options.DestructiveGate, a destructive MCP
// tool asks for approval even though the agent's own gate never asks (the
// stricter wins); once approved, the resumed turn calls it.
func TestTurnDestructiveGate(t *testing.T) {
	never := agent.ToolGate{Mode: agent.GateNeverAsk}
	policy := &agent.ConversationPolicy{Hitl: &agent.HitlPolicy{Tools: &agent.ToolGates{Default: &never}}}
	f := newTurnFixture(t, mcp.Options{DestructiveGate: &agent.ToolGate{Mode: agent.GateAlwaysAsk}}, policy,
		[]agent.ToolRef{{ID: "t.wipe", Version: "1.x"}, {ID: "t.echo", Version: "1.x"}},
		scripted.Call("call_1", "t.echo", map[string]string{"text": "first"}),
		scripted.Call("call_2", "t.wipe", map[string]string{"text": "all"}),
		scripted.Say("Wiped."),
	)
	res := f.invoke(t, "Wipe everything.")
	if res.Status != turn.StatusSuspended || len(res.Approvals) != 1 || res.Approvals[0].ToolID != "t.wipe" {
		t.Fatalf("result %s, approvals %+v: want one approval for t.wipe", res.Status, res.Approvals)
	}
	if _, err := f.store.ResolveApproval(t.Context(), "acme", res.Approvals[0].ID, bindings.ApprovalDecision{Approved: true, Reviewer: "rita"}); err != nil {
		t.Fatal(err)
	}
	final, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: "acme", RunID: res.RunID, Agent: f.agent}, f.b)
	if err != nil {
		t.Fatal(err)
	}
	if final.Status != turn.StatusCompleted || final.Response.Content != "Wiped." {
		t.Fatalf("resumed %s %q", final.Status, final.Response.Content)
	}
	msgs := toolMessages(final)
	if len(msgs) == 0 || !strings.Contains(msgs[len(msgs)-1].Content, `"wiped"`) {
		t.Errorf("tool messages %+v: want wipe's output", msgs)
	}
}
