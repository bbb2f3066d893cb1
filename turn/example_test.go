package turn_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// exampleSetup returns a store with an open conversation of a small
// agent whose acme.send-email tool always asks for approval.
func exampleSetup(script ...scripted.Response) (agent.Agent, turn.Bindings, *memstore.Store, string) {
	ctx := context.Background()
	a, err := agent.Define(agent.Spec{
		ID: "acme.mailer", Version: "1.0.0", Name: "Mailer",
		Instructions: "You send emails for {{ firmName }}.",
		Parameters:   []agent.PromptParameter{{Name: "firmName", Type: agent.TypeString}},
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		Tools:        []agent.ToolRef{{ID: "acme.send-email", Version: "^2.0.0"}},
		ConversationPolicy: &agent.ConversationPolicy{Hitl: &agent.HitlPolicy{
			Tools: &agent.ToolGates{Overrides: map[string]agent.ToolGate{"acme.send-email": {Mode: agent.GateAlwaysAsk}}},
		}},
	})
	if err != nil {
		panic(err)
	}
	store := memstore.New(nil)
	tools := registry.NewTools()
	_ = tools.Add("acme", bindings.ToolDescriptor{ID: "acme.send-email", Version: "2.1.3"},
		func(_ context.Context, in json.RawMessage, call bindings.CallContext) (json.RawMessage, error) {
			fmt.Println("tool ran:", string(in))
			return json.RawMessage(`{"sent":true}`), nil
		})
	conv, err := store.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "acme", AgentID: a.ID, AgentVersion: a.Version})
	if err != nil {
		panic(err)
	}
	b := turn.Bindings{
		Providers: bindings.Providers{scripted.New(script, nil)}, Tools: tools,
		Conversations: store, Snapshots: store, Runs: store, Hitl: store, Journal: store,
	}
	return a, b, store, conv.ID
}

func ExampleInvoke() {
	a, b, _, conv := exampleSetup(scripted.Say("Nothing to send yet."))
	res, err := turn.Invoke(context.Background(), turn.Input{
		TenantID: "acme", Agent: a, ConversationID: conv,
		UserMessage: "Anything for me?", Parameters: map[string]any{"firmName": "Acme LLP"},
	}, b)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.TurnNumber, res.Response.Content)
	// Output: completed 1 Nothing to send yet.
}

func ExampleResume() {
	ctx := context.Background()
	a, b, store, conv := exampleSetup(
		scripted.Call("call_1", "acme.send-email", map[string]string{"to": "legal@globex.example"}),
		scripted.Say("Sent."),
	)
	res, err := turn.Invoke(ctx, turn.Input{
		TenantID: "acme", Agent: a, ConversationID: conv,
		UserMessage: "Email Globex legal.", Parameters: map[string]any{"firmName": "Acme LLP"},
	}, b)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, len(res.Approvals), "approval for", res.Approvals[0].ToolID)

	// Later, perhaps in another process: a reviewer approves, the turn resumes.
	if _, err := store.ResolveApproval(ctx, "acme", res.Approvals[0].ID, bindings.ApprovalDecision{Approved: true, Reviewer: "rita"}); err != nil {
		panic(err)
	}
	final, err := turn.Resume(ctx, turn.ResumeInput{TenantID: "acme", RunID: res.RunID, Agent: a}, b)
	if err != nil {
		panic(err)
	}
	fmt.Println(final.Status, final.Response.Content)
	// Output:
	// suspended 1 approval for acme.send-email
	// tool ran: {"to":"legal@globex.example"}
	// completed Sent.
}
