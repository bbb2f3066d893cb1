// Command hitl shows a turn that parks on a human approval and is resumed
// later by a different set of bindings, as another process would: the
// contract drafter asks to send an email (acme.send-email is always_ask),
// the turn parks, a reviewer approves through the HITL binding, and the
// turn is resumed from fresh bindings over the same store.
//
//	go run ./examples/hitl
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

const (
	tenantID  = "acme"
	projectID = "globex-nda"
)

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

// drafter is the contract drafter of the TypeScript package's example (without retrieval and
// guardrails, which the quickstart shows).
func drafter() (agent.Agent, error) {
	historyLimit := 20
	return agent.Define(agent.Spec{
		ID:           "acme.contract-drafter",
		Version:      "1.0.0",
		Name:         "Contract Drafter",
		Instructions: "You draft contract clauses for {{ firmName }}. Today is {{ today }}.",
		Parameters:   []agent.PromptParameter{{Name: "firmName", Type: agent.TypeString}},
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		Tools: []agent.ToolRef{
			{ID: "acme.clause-search", Version: "^1.0.0"},
			{ID: "acme.send-email", Version: "~2.1.0"},
		},
		Retrieval:  []agent.RetrievalIntent{},
		Guardrails: []string{},
		ConversationPolicy: &agent.ConversationPolicy{
			HistoryLimit: &historyLimit,
			Hitl: &agent.HitlPolicy{Tools: &agent.ToolGates{Overrides: map[string]agent.ToolGate{
				"acme.send-email": {Mode: agent.GateAlwaysAsk},
			}}},
		},
	})
}

// chooseProvider is the one place a model provider is chosen. The script
// is the model's side of the whole turn, across the park.
func chooseProvider() bindings.Provider {
	return scripted.New([]scripted.Response{
		scripted.Call("call_1", "acme.send-email", map[string]any{
			"to": "legal@globex.example", "subject": "Mutual NDA draft", "body": "Please find our draft attached.",
		}).WithUsage(380, 40, 0.0011),
		scripted.Say("Done: the NDA draft went to Globex's legal team.").WithUsage(450, 15, 0.0012),
	}, nil)
}

// process is what one process of a host has: its own bindings over the
// shared store (in production, a shared database).
func process(name string, store *memstore.Store, tools *registry.Tools, provider bindings.Provider) turn.Bindings {
	return turn.Bindings{
		Providers: bindings.Providers{provider}, Tools: tools,
		Memory: store, Conversations: store, Snapshots: store, Runs: store, Hitl: store, Journal: store,
		OnEvent: func(_ context.Context, e turn.Event) {
			switch ev := e.(type) {
			case turn.ApprovalRequestedEvent:
				fmt.Printf("[%s] %s: %s needs a %s reviewer (approval %s)\n", name, e.Kind(), ev.ToolID, ev.ReviewerRole, ev.ApprovalID)
			case turn.ToolStartedEvent:
				fmt.Printf("[%s] %s: %s@%s, request id %s\n", name, e.Kind(), ev.ToolID, ev.ToolVersion, ev.RequestID)
			case turn.NodeStartedEvent, turn.NodeCompletedEvent:
			default:
				fmt.Printf("[%s] %s\n", name, e.Kind())
			}
		},
	}
}

func run(ctx context.Context) error {
	store := memstore.New(nil)
	a, err := drafter()
	if err != nil {
		return err
	}
	tools := registry.NewTools()
	if err := tools.Add(tenantID, bindings.ToolDescriptor{
		ID: "acme.clause-search", Version: "1.2.0",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
	}, func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
		return json.RawMessage(`{"clauses":[]}`), nil
	}); err != nil {
		return err
	}
	sent := map[string]bool{} // request ids already handled: the tool's idempotency keys
	if err := tools.Add(tenantID, bindings.ToolDescriptor{
		ID: "acme.send-email", Version: "2.1.3",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"},"subject":{"type":"string"},"body":{"type":"string"}},"required":["to","subject","body"]}`),
	}, func(_ context.Context, input json.RawMessage, call bindings.CallContext) (json.RawMessage, error) {
		if !sent[call.RequestID] {
			sent[call.RequestID] = true
			fmt.Printf("        (email sent: %s)\n", input)
		}
		return json.RawMessage(`{"sent":true}`), nil
	}); err != nil {
		return err
	}
	conv, err := store.OpenConversation(ctx, bindings.OpenConversationInput{
		TenantID: tenantID, ProjectID: projectID, AgentID: a.ID, AgentVersion: a.Version, Title: "NDA for globex",
	})
	if err != nil {
		return err
	}
	provider := chooseProvider()

	// Process A runs the turn until it parks.
	res, err := turn.Invoke(ctx, turn.Input{
		TenantID: tenantID, ProjectID: projectID, Agent: a, ConversationID: conv.ID,
		UserMessage: "Send our NDA draft to Globex's legal team.",
		Parameters:  map[string]any{"firmName": "Acme LLP"},
	}, process("A", store, tools, provider))
	if err != nil {
		return err
	}
	fmt.Printf("turn %s: status %s, %d approval(s) pending\n\n", res.RunID, res.Status, len(res.Approvals))

	// A reviewer decides through the HITL binding.
	for _, req := range res.Approvals {
		appr, err := store.ResolveApproval(ctx, tenantID, req.ID, bindings.ApprovalDecision{
			Approved: true, Reviewer: "rita@acme.example", ReviewerRoles: []string{"standard"}, Comment: "Fine to send.",
		})
		if err != nil {
			return err
		}
		fmt.Printf("reviewer %s %s %s@%s with %s\n\n", appr.Reviewer, appr.Status, req.ToolID, req.ToolVersion, req.Arguments)
	}

	// Process B, with bindings of its own, resumes the run by id.
	final, err := turn.Resume(ctx, turn.ResumeInput{TenantID: tenantID, RunID: res.RunID, Agent: a},
		process("B", store, tools, provider))
	if err != nil {
		return err
	}
	fmt.Printf("\nturn %s: status %s after %d model call(s) and %d tool call(s), $%.4f\n",
		final.RunID, final.Status, final.Usage.ModelCalls, final.Usage.ToolCalls, final.Usage.CostUsd)
	fmt.Printf("response: %s\n", final.Response.Content)
	msgs, err := store.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: tenantID, ConversationID: conv.ID, Limit: 20})
	if err != nil {
		return err
	}
	fmt.Println("\nconversation:")
	for _, m := range msgs {
		text := m.Content
		for _, c := range m.ToolCalls {
			text += fmt.Sprintf("(calls %s %s)", c.Name, c.Arguments)
		}
		fmt.Printf("  %-5s %s\n", m.Role, text)
	}
	return nil
}
