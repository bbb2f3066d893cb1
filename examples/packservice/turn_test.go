package main

import (
	"encoding/json"
	"strings"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/pack"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// TestTurnWithRemoteToolAndCheck runs a turn whose tool (demo.echo) and
// guardrail check (demo.no-digits) live in the example pack service,
// reached over pack protocol v2.
func TestTurnWithRemoteToolAndCheck(t *testing.T) {
	t.Parallel()
	p := start(t, nil)
	ctx := t.Context()
	client := pack.NewClient(p.url, token, nil)
	tools := pack.NewToolSource(client, nil)
	checks, err := pack.NewCheckSource(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.Define(agent.Spec{
		ID: "demo.echoer", Version: "1.0.0", Name: "Echoer", Instructions: "Echo what you are told.",
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		Tools:        []agent.ToolRef{{ID: "demo.echo", Version: "^1.0.0"}},
		Guardrails:   []string{"no-digits"},
	})
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name     string
		action   string
		final    string
		wantCode string
		wantViol int
	}{
		{"check passes", bindings.ActionHalt, "You said hello.", "", 0},
		{"check fails, reported", bindings.ActionLog, "You said hello 3 times.", "", 1},
		{"check fails, halts", bindings.ActionHalt, "You said hello 3 times.", agents.CodeGuardrailViolation, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := memstore.New(nil)
			conv, err := store.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "acme", ProjectID: "p", AgentID: a.ID, AgentVersion: a.Version})
			if err != nil {
				t.Fatal(err)
			}
			provider := scripted.New([]scripted.Response{
				scripted.Call("call_1", "demo.echo", map[string]any{"text": "hello"}),
				scripted.Say(tc.final),
			}, nil)
			res, err := turn.Invoke(ctx, turn.Input{TenantID: "acme", ProjectID: "p", Agent: a, ConversationID: conv.ID, UserMessage: "say hello"}, turn.Bindings{
				Providers: bindings.Providers{provider}, Tools: tools, Memory: store,
				Conversations: store, Snapshots: store, Runs: store, Journal: store,
				Guardrails: memstore.Guardrails{Shared: map[string]bindings.Guardrail{
					"no-digits": {ID: "no-digits", Kind: "pack", CheckID: "demo.no-digits", Action: tc.action},
				}},
				Checks: checks,
			})
			if code := agents.CodeOf(err); code != tc.wantCode {
				t.Fatalf("err = %v (code %q), want code %q", err, code, tc.wantCode)
			}
			// The remote tool ran and its output went back to the model.
			reqs := provider.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model requests, want 2", len(reqs))
			}
			last := reqs[1].Messages[len(reqs[1].Messages)-1]
			var out struct{ Text string }
			if last.Role != bindings.ChatTool || last.ToolCallID != "call_1" || json.Unmarshal([]byte(last.Content), &out) != nil || out.Text != "hello" {
				t.Fatalf("tool message = %+v", last)
			}
			if err != nil {
				return
			}
			if len(res.Violations) != tc.wantViol || res.Response.Content != tc.final {
				t.Errorf("violations %+v, response %q", res.Violations, res.Response.Content)
			}
			if tc.wantViol > 0 && !strings.Contains(res.Violations[0].Reason+res.Violations[0].GuardrailID, "no-digits") {
				t.Errorf("violation = %+v", res.Violations[0])
			}
		})
	}
}
