package turn_test

import (
	"context"
	"fmt"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// ExampleWorker submits a turn that parks on its gated tool, lets a
// worker drive it, decides the approval, and waits again: the worker
// continues the run without a Resume call.
func ExampleWorker() {
	a, b, store, conv := exampleSetup(
		scripted.Call("call_1", "acme.send-email", map[string]any{"to": "legal@globex.test"}),
		scripted.Say("Sent."),
	)
	b.Agents = func(context.Context, string, string, string) (agent.Agent, error) { return a, nil }
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- turn.NewWorker(b, turn.WorkerOptions{MaxConcurrent: 4}).Run(ctx) }()

	runID, err := turn.Submit(context.Background(), turn.Input{
		TenantID: "acme", Agent: a, ConversationID: conv,
		UserMessage: "Send the NDA to legal.", Parameters: map[string]any{"firmName": "Acme LLP"},
	}, b)
	if err != nil {
		panic(err)
	}
	res, err := turn.Wait(context.Background(), b, "acme", runID)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.Approvals[0].ToolID)
	if _, err := store.ResolveApproval(context.Background(), "acme", res.Approvals[0].ID, bindings.ApprovalDecision{Approved: true, Reviewer: "rita"}); err != nil {
		panic(err)
	}
	res, err = turn.Wait(context.Background(), b, "acme", runID)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.Response.Content)
	stop()
	fmt.Println("worker stopped:", <-done)
	// Output:
	// suspended acme.send-email
	// tool ran: {"to":"legal@globex.test"}
	// completed Sent.
	// worker stopped: <nil>
}
