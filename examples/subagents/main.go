// Command subagents shows agents composing agents, durably. A triage
// agent answers a customer: it calls a research agent about the contract
// (a sub-agent call: a journaled child run whose answer is the call's
// result), then hands the billing question off to the billing agent (a
// handoff: the rest of the turn runs as the billing agent, with its
// instructions, tools and policy). The billing agent's refund tool is
// gated always_ask, so the turn parks on the refund's approval. A
// reviewer approves; the turn then finishes as the billing agent — by
// Resume on memstore, or, with -postgres, by turn workers (no Resume
// call). The refund runs once, and the answer is the billing agent's.
//
//	go run ./examples/subagents
//	go run ./examples/subagents -postgres postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable -workers 2
//
// The model is a scripted one that answers from the conversation it is
// sent, so the program needs no API key.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/pgstore"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

const tenantID = "acme-subagents"

func main() {
	pg := flag.String("postgres", "", "PostgreSQL URL: run the tree on pgstore, finished by workers")
	workers := flag.Int("workers", 2, "turn workers to run with -postgres")
	flag.Parse()
	if err := run(context.Background(), *pg, *workers, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

var toolUse = []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}}

// definedAgents are the three agents: triage calls research (a sub-agent)
// and hands billing questions off to billing.
func definedAgents() (triage, research, billing agent.Agent, err error) {
	if research, err = agent.Define(agent.Spec{
		ID: "acme.research", Version: "1.0.0", Name: "Research", Description: "Answers questions about the customer's contract.",
		Instructions: "You research contracts.", Capabilities: toolUse,
	}); err != nil {
		return
	}
	if billing, err = agent.Define(agent.Spec{
		ID: "acme.billing", Version: "1.2.0", Name: "Billing", Description: "Handles billing questions and refunds.",
		Instructions: "You handle billing.", Capabilities: toolUse,
		Tools: []agent.ToolRef{{ID: "acme.refund", Version: "^1.0.0"}},
		ConversationPolicy: &agent.ConversationPolicy{Hitl: &agent.HitlPolicy{Tools: &agent.ToolGates{Overrides: map[string]agent.ToolGate{
			"acme.refund": {Mode: agent.GateAlwaysAsk},
		}}}},
	}); err != nil {
		return
	}
	triage, err = agent.Define(agent.Spec{
		ID: "acme.triage", Version: "1.0.0", Name: "Triage", Instructions: "You triage customer requests.", Capabilities: toolUse,
		SubAgents: []agent.AgentRef{{ID: "acme.research", Version: "^1.0.0", Name: "research"}},
		Handoffs:  []agent.AgentRef{{ID: "acme.billing", Version: "^1.0.0", Name: "to_billing"}},
	})
	return
}

// model answers from the request: which agent asks (its instructions) and
// the tool results it has. After the handoff the billing agent sees the
// conversation so far, triage's tool results included.
type model struct{}

func (model) ID() string { return "scripted" }
func (model) Models() []bindings.ModelInfo {
	return []bindings.ModelInfo{{ID: "scripted-1", Features: []string{"tool-use"}, InputPricePerMTok: 1, OutputPricePerMTok: 4}}
}

func (model) Generate(_ context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	results := 0
	for _, m := range req.Messages {
		if m.Role == bindings.ChatTool {
			results++
		}
	}
	call := func(name string, args any) (bindings.GenerateResponse, error) {
		raw, _ := json.Marshal(args)
		return bindings.GenerateResponse{ToolCalls: []bindings.ToolCall{{ID: fmt.Sprintf("call_%d", results+1), Name: name, Arguments: raw}},
			FinishReason: "tool_calls", Usage: bindings.Usage{InputTokens: 300, OutputTokens: 30}}, nil
	}
	say := func(text string) (bindings.GenerateResponse, error) {
		return bindings.GenerateResponse{Text: text, FinishReason: "stop", Usage: bindings.Usage{InputTokens: 400, OutputTokens: 40}}, nil
	}
	switch system := req.Messages[0].Content; {
	case strings.Contains(system, "triage"):
		switch results {
		case 0:
			return call("research", map[string]any{"message": "Does the Globex contract allow a refund of a duplicate charge?"})
		case 1:
			return call("to_billing", map[string]any{"message": "Refund the duplicate charge of $40 on order 1042."})
		}
		return say("The billing desk has your request.") // not reached: billing answers
	case strings.Contains(system, "research"):
		return say("Clause 7.2 allows refunds of duplicate charges within 90 days.")
	default: // billing, after the handoff
		for _, m := range req.Messages {
			if m.Role == bindings.ChatTool && strings.Contains(m.Content, "refunded") {
				return say("Clause 7.2 of your contract allows it: the $40 duplicate charge on order 1042 is refunded.")
			}
		}
		return call("acme.refund", map[string]any{"order": "1042", "amountUsd": 40})
	}
}

// store is what the program needs of memstore or pgstore.
type store interface {
	bindings.ConversationBinding
	bindings.RunSnapshotBinding
	bindings.RunBinding
	bindings.HitlBinding
	bindings.MemoryQueryBinding
}

func run(ctx context.Context, pgURL string, workers int, out io.Writer) error {
	triage, research, billing, err := definedAgents()
	if err != nil {
		return err
	}
	reg, err := registry.NewAgents(triage, research, billing)
	if err != nil {
		return err
	}
	var refunds atomic.Int64
	tools := registry.NewTools()
	if err := tools.Add(tenantID, bindings.ToolDescriptor{
		ID: "acme.refund", Version: "1.0.0", Description: "Refund an amount on an order.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"order":{"type":"string"},"amountUsd":{"type":"number"}},"required":["order","amountUsd"]}`),
	}, func(_ context.Context, in json.RawMessage, call bindings.CallContext) (json.RawMessage, error) {
		refunds.Add(1)
		fmt.Fprintf(out, "  refund tool ran: %s (request %s)\n", in, call.RequestID)
		return json.RawMessage(`{"refunded":true}`), nil
	}); err != nil {
		return err
	}
	var s store
	var pg *pgstore.Store
	if pgURL == "" {
		s = memstore.New(nil)
	} else {
		if pg, err = pgstore.Open(ctx, pgURL, nil); err != nil { // migrates too
			return err
		}
		defer pg.Close()
		s = pg
	}
	b := turn.Bindings{
		Providers: bindings.Providers{model{}}, Tools: tools,
		Memory: s, Conversations: s, Snapshots: s, Runs: s, Hitl: s,
		Agents: reg.Lookup, AgentVersions: reg.Versions,
		OnEvent: func(_ context.Context, e turn.Event) {
			if ev, ok := e.(turn.TurnStartedEvent); ok {
				fmt.Fprintf(out, "  run started: %s (%s)\n", ev.RunID, ev.AgentID)
			}
		},
	}
	conv, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenantID, AgentID: triage.ID, AgentVersion: triage.Version})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "triage turn:")
	res, err := turn.Invoke(ctx, turn.Input{TenantID: tenantID, Agent: triage, ConversationID: conv.ID,
		UserMessage: "I was charged twice for order 1042. Can I get my $40 back?"}, b)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "status %s, waiting on %d approval(s):\n", res.Status, len(res.Approvals))
	for _, a := range res.Approvals {
		fmt.Fprintf(out, "  approval %s\n    of run %s: %s %s\n", a.ID, a.RunID, a.ToolID, a.Arguments)
		if _, err := s.ResolveApproval(ctx, tenantID, a.ID, bindings.ApprovalDecision{Approved: true, Reviewer: "rita"}); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "approved by rita")
	if pg == nil {
		fmt.Fprintln(out, "resuming the triage run:")
		if res, err = turn.Resume(ctx, turn.ResumeInput{TenantID: tenantID, RunID: res.RunID}, b); err != nil {
			return err
		}
	} else if res, err = finishByWorkers(ctx, b, res.RunID, workers, out); err != nil {
		return err
	}
	fmt.Fprintf(out, "status %s: %q\n  answered by %s@%s\n", res.Status, res.Response.Content, res.AgentID, res.AgentVersion)
	for _, sr := range res.SubRuns {
		fmt.Fprintf(out, "  sub-run %s: %s@%s %s, %d model calls, %d tool calls\n", sr.RunID, sr.AgentID, sr.AgentVersion, sr.Status, sr.Usage.ModelCalls, sr.Usage.ToolCalls)
	}
	fmt.Fprintf(out, "usage of the tree: %d model calls, %d tool calls, $%.4f; the refund ran %d time(s)\n",
		res.Usage.ModelCalls, res.Usage.ToolCalls, res.Usage.CostUsd, refunds.Load())
	return nil
}

// finishByWorkers runs n turn workers until the run finishes (one of them
// continues the turn as the billing agent) and returns its result.
func finishByWorkers(ctx context.Context, b turn.Bindings, runID string, n int, out io.Writer) (turn.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	wb := b
	wb.OnEvent = nil
	done := make(chan error, n)
	for i := range n {
		w := turn.NewWorker(wb, turn.WorkerOptions{TenantIDs: []string{tenantID}, PollInterval: 50 * time.Millisecond,
			OnRun: func(r bindings.Run, res turn.Result, err error) {
				fmt.Fprintf(out, "  worker %d drove %s: %s %v\n", i+1, r.ID, res.Status, err)
			}})
		go func() { done <- w.Run(ctx) }()
	}
	defer func() {
		cancel()
		for range n {
			<-done
		}
	}()
	for {
		run, err := b.Runs.GetRun(ctx, tenantID, runID)
		if err != nil {
			return turn.Result{}, err
		}
		if run.Status.Terminal() {
			return turn.Resume(ctx, turn.ResumeInput{TenantID: tenantID, RunID: runID}, wb) // its stored result
		}
		select {
		case <-ctx.Done():
			return turn.Result{}, fmt.Errorf("run %s is still %s: %w", runID, run.Status, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
