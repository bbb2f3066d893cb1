package agents_test

// The README's tour: README.md shows the code between the tour markers
// below verbatim (TestReadmeShowsTheTour holds them equal), so the tour a
// newcomer reads is code that compiles and whose output is checked.

// tour:begin
import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

func Example_tour() {
	ctx := context.Background()

	// An agent is data: validated once, pinned by id@version.
	maxSteps, maxCost, maxWall, history := 6, 0.25, int64(60_000), 20
	drafter, err := agent.Define(agent.Spec{
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
		Retrieval:  []agent.RetrievalIntent{{Types: []string{"acme.clause"}, Scope: agent.ScopeSameProject, Mode: agent.ModeKeyword}},
		Guardrails: []string{"acme.no-pii"},
		ConversationPolicy: &agent.ConversationPolicy{
			HistoryLimit: &history,
			Hitl: &agent.HitlPolicy{Tools: &agent.ToolGates{Overrides: map[string]agent.ToolGate{
				"acme.send-email": {Mode: agent.GateAlwaysAsk},
			}}},
		},
		Budget: &agent.TurnBudget{MaxSteps: &maxSteps, MaxCostUsd: &maxCost, MaxWallMs: &maxWall},
	})
	var invalid *agents.InvalidAgentError
	if errors.As(err, &invalid) {
		for _, is := range invalid.Issues {
			fmt.Println(is.Path, is.Message) // every problem, e.g. "tools[1].version: …"
		}
		return
	}

	// Tools are registered per tenant, by exact version; agents pin ranges.
	// A typed Go function is a tool: its schemas come from its types.
	type searchArgs struct {
		Query string `json:"query" jsonschema:"what the clause is about"`
	}
	type searchResult struct {
		Clauses []string `json:"clauses"`
	}
	tools := registry.NewTools()
	_ = registry.AddFunc(tools, "acme", registry.FuncTool{ID: "acme.clause-search", Version: "1.2.0", Description: "Search clauses"},
		func(ctx context.Context, in searchArgs, call bindings.CallContext) (searchResult, error) {
			return searchResult{Clauses: []string{"C-7"}}, nil
		})
	_ = tools.Add("acme", bindings.ToolDescriptor{ID: "acme.send-email", Version: "2.1.3"},
		func(ctx context.Context, in json.RawMessage, call bindings.CallContext) (json.RawMessage, error) {
			fmt.Println("email sent:", string(in))
			return json.RawMessage(`{"sent":true}`), nil
		})

	// memstore implements every storage binding in memory (pgstore does on
	// PostgreSQL); StoreBindings binds it to each storage field at once.
	store := memstore.New(nil)
	_, _ = store.PutFact(ctx, bindings.Fact{TenantID: "acme", ProjectID: "globex", ID: "C-7", Type: "acme.clause",
		Text: "Mutual confidentiality: three years after disclosure."})
	conv, _ := store.OpenConversation(ctx, bindings.OpenConversationInput{
		TenantID: "acme", ProjectID: "globex", AgentID: drafter.ID, AgentVersion: drafter.Version,
	})

	// A scripted model stands in for a real one (providers/openai, …).
	model := scripted.New([]scripted.Response{
		scripted.Call("call_1", "acme.clause-search", map[string]string{"query": "confidentiality"}),
		scripted.Call("call_2", "acme.send-email", map[string]string{"to": "legal@globex.example"}),
		scripted.Say("Drafted from clause C-7 and sent to Globex legal."),
	}, nil)

	b := turn.StoreBindings(store)
	b.Providers, b.Tools = bindings.Providers{model}, tools
	b.Guardrails = memstore.Guardrails{Shared: map[string]bindings.Guardrail{
		"acme.no-pii": {ID: "acme.no-pii", Kind: "regex", CheckID: "no-email-address", Action: bindings.ActionLog},
	}}
	b.Checks = memstore.Checks{"no-email-address": bindings.CheckFunc(
		func(ctx context.Context, config json.RawMessage, trace bindings.RunTrace) (bindings.CheckResult, error) {
			return bindings.CheckResult{Passed: true}, nil
		})}
	b.OnEvent = func(ctx context.Context, e turn.Event) {
		if e.Kind() == turn.KindToolCompleted {
			fmt.Println("event:", e.Kind())
		}
	}

	res, err := turn.Invoke(ctx, turn.Input{
		TenantID: "acme", ProjectID: "globex", Agent: drafter, ConversationID: conv.ID,
		UserMessage: "Draft a mutual confidentiality clause and email it to Globex legal.",
		Parameters:  map[string]any{"firmName": "Acme LLP"},
	}, b)
	switch {
	case agents.CodeOf(err) == agents.CodeBudgetExceeded:
		fmt.Println("stopped by maxSteps or maxCostUsd")
		return
	case err != nil:
		fmt.Println(agents.CodeOf(err), err)
		return
	}
	fmt.Println(res.Status, "on", res.Approvals[0].ToolID, "with", len(res.Retrieved), "fact retrieved")

	// The turn parked before the gated tool ran. Once a reviewer decides,
	// Resume continues it — in this process or any other over the same store.
	_, _ = store.ResolveApproval(ctx, "acme", res.Approvals[0].ID, bindings.ApprovalDecision{Approved: true, Reviewer: "rita"})
	res, err = turn.Resume(ctx, turn.ResumeInput{TenantID: "acme", RunID: res.RunID, Agent: drafter}, b)
	if err != nil {
		fmt.Println(agents.CodeOf(err), err)
		return
	}
	fmt.Println(res.Status, res.Usage.ModelCalls, "model calls:", res.Response.Content)
	// Output:
	// event: tool.completed
	// suspended on acme.send-email with 1 fact retrieved
	// email sent: {"to":"legal@globex.example"}
	// event: tool.completed
	// completed 3 model calls: Drafted from clause C-7 and sent to Globex legal.
}

// tour:end
