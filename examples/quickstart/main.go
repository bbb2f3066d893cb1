// Command quickstart runs the contract-drafter agent of the TypeScript package's example for one turn,
// end to end, on the in-memory bindings (memstore) and a scripted model:
// a retrieval of clause facts, an acme.clause-search tool call, and a final
// answer. It prints the streamed events and the result.
//
//	go run ./examples/quickstart
//	go run ./examples/quickstart -provider openai -model gpt-4o-mini -stream
//	go run ./examples/quickstart -provider anthropic -model claude-sonnet-4-5 -stream
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"regexp"
	"strings"

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
	var cfg config
	flag.StringVar(&cfg.provider, "provider", "scripted", "model provider: scripted (no network), openai or anthropic")
	flag.StringVar(&cfg.model, "model", "", "model id for -provider openai (default gpt-4o-mini) or anthropic (default claude-sonnet-4-5)")
	flag.BoolVar(&cfg.stream, "stream", false, "stream the model's answers and print them as they arrive (openai, anthropic)")
	flag.Parse()
	provider, err := chooseProvider(cfg)
	if err != nil {
		log.Fatal(err)
	}
	if err := run(context.Background(), provider); err != nil {
		log.Fatal(err)
	}
}

// drafterSpec is the example agent of the TypeScript package's documentation.
func drafterSpec() agent.Spec {
	historyLimit := 20
	maxSteps, maxCost, maxWall := 6, 0.25, int64(60_000)
	limit := 5
	return agent.Spec{
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
		Retrieval:  []agent.RetrievalIntent{{Types: []string{"acme.clause"}, Scope: agent.ScopeSameProject, Mode: agent.ModeKeyword, Limit: &limit}},
		Guardrails: []string{"acme.no-pii"},
		ConversationPolicy: &agent.ConversationPolicy{
			HistoryLimit: &historyLimit,
			Hitl: &agent.HitlPolicy{Tools: &agent.ToolGates{Overrides: map[string]agent.ToolGate{
				"acme.send-email": {Mode: agent.GateAlwaysAsk},
			}}},
		},
		Budget: &agent.TurnBudget{MaxSteps: &maxSteps, MaxCostUsd: &maxCost, MaxWallMs: &maxWall},
	}
}

// scriptedProvider plays the turn's two model answers without a network.
func scriptedProvider() bindings.Provider {
	return scripted.New([]scripted.Response{
		scripted.Call("call_1", "acme.clause-search", map[string]any{"query": "mutual confidentiality"}).WithUsage(420, 24, 0.0012),
		scripted.Say("Here is a mutual confidentiality clause for Acme LLP, adapted from clause C-7:\n\n"+
			"\"Each party shall hold the other party's Confidential Information in strict confidence for three (3) years "+
			"after disclosure and use it solely to evaluate the proposed transaction.\"").WithUsage(610, 88, 0.0021),
	}, nil)
}

func run(ctx context.Context, provider bindings.Provider) error {
	store := memstore.New(nil)

	drafter, err := agent.Define(drafterSpec())
	if err != nil {
		return err
	}

	tools := registry.NewTools()
	// A typed Go tool: its input and output schemas come from the types.
	if err := registry.AddFunc(tools, tenantID, registry.FuncTool{
		ID: "acme.clause-search", Version: "1.2.0", Description: "Search the firm's clause library.",
	}, clauseSearch); err != nil {
		return err
	}
	if err := tools.Add(tenantID, bindings.ToolDescriptor{
		ID: "acme.send-email", Version: "2.1.3", Description: "Send an email on the firm's behalf.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"},"subject":{"type":"string"},"body":{"type":"string"}},"required":["to","subject","body"]}`),
	}, func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
		return json.RawMessage(`{"sent":true}`), nil
	}); err != nil {
		return err
	}

	for _, f := range []bindings.Fact{
		{ID: "C-7", Text: "Mutual confidentiality: three years after disclosure, evaluation purpose only."},
		{ID: "C-12", Text: "Non-solicitation of employees for twelve months."},
	} {
		f.TenantID, f.ProjectID, f.Type = tenantID, projectID, "acme.clause"
		if _, err := store.PutFact(ctx, f); err != nil {
			return err
		}
	}

	conv, err := store.OpenConversation(ctx, bindings.OpenConversationInput{
		TenantID: tenantID, ProjectID: projectID, AgentID: drafter.ID, AgentVersion: drafter.Version, Title: "NDA for globex",
	})
	if err != nil {
		return err
	}

	// The store serves every storage binding (conversations, runs, journal,
	// memory, approvals, provenance, compliance); the rest is set by hand.
	b := turn.StoreBindings(store)
	b.Providers, b.Tools = bindings.Providers{provider}, tools
	b.Provenance.Keys = memstore.NewKeys(nil)
	b.Guardrails = memstore.Guardrails{Shared: map[string]bindings.Guardrail{
		"acme.no-pii": {ID: "acme.no-pii", Kind: "pattern", CheckID: "no-pii", Action: bindings.ActionHalt},
	}}
	b.Checks = memstore.Checks{"no-pii": bindings.CheckFunc(noPII)}
	b.OnEvent = func(_ context.Context, e turn.Event) {
		if printDelta(e) {
			return // -stream: the answer as it arrives
		}
		if strings.HasPrefix(e.Kind(), "node.") {
			return // one event per journal step: too chatty for a demo
		}
		fmt.Printf("event %-22s %s\n", e.Kind(), summary(e))
	}

	res, err := turn.Invoke(ctx, turn.Input{
		TenantID: tenantID, ProjectID: projectID, Agent: drafter, ConversationID: conv.ID,
		UserMessage: "Draft a mutual confidentiality clause for our NDA with Globex.",
		Parameters:  map[string]any{"firmName": "Acme LLP"},
	}, b)
	if err != nil {
		return err
	}
	fmt.Println()
	fmt.Printf("status:    %s (run %s, turn %d)\n", res.Status, res.RunID, res.TurnNumber)
	fmt.Printf("provider:  %s/%s\n", res.Provider.Provider, res.Provider.Model)
	fmt.Printf("retrieved: %d fact(s)\n", len(res.Retrieved))
	fmt.Printf("appended:  %d message(s)\n", len(res.Appended))
	fmt.Printf("usage:     %d model call(s), %d tool call(s), %d in / %d out tokens, $%.4f\n",
		res.Usage.ModelCalls, res.Usage.ToolCalls, res.Usage.InputTokens, res.Usage.OutputTokens, res.Usage.CostUsd)
	if res.Provenance != nil {
		fmt.Printf("provenance: signed by %s, verifies: %v\n", res.Provenance.KeyID, turn.VerifyProvenance(ctx, *res.Provenance, b.Provenance.Keys) == nil)
	}
	fmt.Printf("response:\n%s\n", res.Response.Content)
	return nil
}

// clauseSearchInput is the input of acme.clause-search.
type clauseSearchInput struct {
	Query string `json:"query" jsonschema:"what the clause is about"`
}

// clause is one clause of the library.
type clause struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

// clauseSearchOutput is the output of acme.clause-search.
type clauseSearchOutput struct {
	Query   string   `json:"query"`
	Clauses []clause `json:"clauses"`
}

// clauseSearch is the acme.clause-search tool.
func clauseSearch(_ context.Context, in clauseSearchInput, _ bindings.CallContext) (clauseSearchOutput, error) {
	if strings.TrimSpace(in.Query) == "" {
		return clauseSearchOutput{}, errors.New("query is empty: say what the clause is about")
	}
	return clauseSearchOutput{Query: in.Query, Clauses: []clause{
		{ID: "C-7", Title: "Mutual confidentiality", Text: "Each party shall hold the other's Confidential Information in confidence for three years."},
	}}, nil
}

var piiPattern = regexp.MustCompile(`\b\d{3}-\d{2}-\d{4}\b|[\w.+-]+@[\w-]+\.[\w.]+`)

// noPII fails a response that contains an email address or a US SSN.
func noPII(_ context.Context, _ json.RawMessage, trace bindings.RunTrace) (bindings.CheckResult, error) {
	if piiPattern.MatchString(trace.Response.Content) {
		return bindings.CheckResult{Passed: false, Reason: "the response contains personal data"}, nil
	}
	return bindings.CheckResult{Passed: true}, nil
}

// summary renders an event's fields on one line.
func summary(e turn.Event) string {
	b, _ := json.Marshal(e)
	s := string(b)
	if len(s) > 110 {
		s = s[:107] + "..."
	}
	return strings.ReplaceAll(s, "\n", " ")
}
