// Command eval records three turns of a support agent on memstore, changes
// the agent's instructions, and evaluates the new version against the
// recorded turns with two graders, printing the report:
//
//	go run ./examples/eval
//
// The tool calls of the new version are answered from the recorded runs'
// journals (eval.ReplayTools): the order-status tool runs three times,
// while recording, and never during the evaluation. One case regresses:
// its recorded answer passed both graders, the new one does not.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/eval"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

const tenant = "acme"

func main() {
	ok, err := run(context.Background(), os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "eval:", err)
		os.Exit(1)
	}
	if !ok {
		fmt.Println("(kindgi eval would exit 1 here: a case failed)")
	}
}

// supportAgent is the support agent at version with instructions.
func supportAgent(version, instructions string) (agent.Agent, error) {
	return agent.Define(agent.Spec{
		ID: "acme.support", Version: version, Name: "Support",
		Instructions: instructions,
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		Tools:        []agent.ToolRef{{ID: "acme.order-status", Version: "^1.0.0"}},
	})
}

// run records, evaluates and prints; ok reports whether every case passed.
func run(ctx context.Context, w io.Writer) (ok bool, err error) {
	store := memstore.New(nil)
	tools := registry.NewTools()
	toolRuns := 0
	err = tools.Add(tenant, bindings.ToolDescriptor{ID: "acme.order-status", Version: "1.0.0"},
		func(_ context.Context, in json.RawMessage, _ bindings.CallContext) (json.RawMessage, error) {
			toolRuns++
			var q struct{ Order int }
			if err := json.Unmarshal(in, &q); err != nil {
				return nil, err
			}
			return json.Marshal(map[string]any{"order": q.Order, "status": "delayed", "eta": "Friday"})
		})
	if err != nil {
		return false, err
	}
	b := turn.StoreBindings(store)
	b.Tools = tools

	// Record three turns of acme.support@1.0.0.
	v1, err := supportAgent("1.0.0", "You answer questions about orders. Apologise for delays.")
	if err != nil {
		return false, err
	}
	var runIDs []string
	for i, q := range []struct{ msg, answer string }{
		{"Where is order 17?", "Sorry for the delay: order 17 arrives on Friday."},
		{"Order 23 is late!", "Sorry for the delay: order 23 arrives on Friday."},
		{"Status of order 42?", "Order 42 is delayed, sorry; it arrives on Friday."},
	} {
		order := []int{17, 23, 42}[i]
		b.Providers = bindings.Providers{scripted.New([]scripted.Response{
			scripted.Call("call_1", "acme.order-status", map[string]int{"order": order}).WithUsage(120, 12, 0.0002),
			scripted.Say(q.answer).WithUsage(160, 18, 0.0003),
		}, nil)}
		conv, err := store.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, AgentID: v1.ID, AgentVersion: v1.Version})
		if err != nil {
			return false, err
		}
		res, err := turn.Invoke(ctx, turn.Input{TenantID: tenant, Agent: v1, ConversationID: conv.ID, UserMessage: q.msg,
			RunID: "run-" + strconv.Itoa(i+1)}, b) // readable run ids
		if err != nil {
			return false, err
		}
		runIDs = append(runIDs, res.RunID)
	}
	fmt.Fprintf(w, "recorded %d runs of %s@%s (the tool ran %d times)\n", len(runIDs), v1.ID, v1.Version, toolRuns)

	// The recorded runs become the dataset.
	ds, err := eval.DatasetFromRuns(ctx, b, tenant, runIDs)
	if err != nil {
		return false, err
	}

	// Version 1.1.0 is told to be brief; its model (scripted here) drops
	// the apology on the second case.
	v2, err := supportAgent("1.1.0", "You answer questions about orders. Be brief.")
	if err != nil {
		return false, err
	}
	b.Providers = bindings.Providers{scripted.New([]scripted.Response{
		scripted.Call("c", "acme.order-status", map[string]int{"order": 17}).WithUsage(100, 10, 0.0001),
		scripted.Say("Sorry, order 17 arrives Friday.").WithUsage(130, 9, 0.0002),
		scripted.Call("c", "acme.order-status", map[string]int{"order": 23}).WithUsage(100, 10, 0.0001),
		scripted.Say("Order 23: Friday.").WithUsage(130, 5, 0.0002),
		scripted.Call("c", "acme.order-status", map[string]int{"order": 42}).WithUsage(100, 10, 0.0001),
		scripted.Say("Sorry, order 42 arrives Friday.").WithUsage(130, 9, 0.0002),
	}, nil)}
	before := toolRuns
	rep, err := eval.Run(ctx, ds, eval.Options{
		Agent: v2, Bindings: b,
		Graders: []eval.Grader{eval.Contains("Friday"), eval.Matches(`(?i)\bsorry\b`)},
	})
	if err != nil {
		return false, err
	}
	fmt.Fprintf(w, "evaluated %s@%s on them (the tool ran %d times)\n\n", v2.ID, v2.Version, toolRuns-before)
	for _, c := range rep.Cases {
		fmt.Fprintf(w, "%-9s %s  %q\n", strings.ToUpper(c.Outcome()), c.FromRunID, c.UserMessage)
		fmt.Fprintf(w, "          baseline: %s\n          new:      %s\n", c.Baseline.Answer, c.Answer)
		for _, g := range c.Grades {
			if !g.Pass {
				fmt.Fprintf(w, "          %s: %s\n", g.Name, g.Reason)
			}
		}
	}
	fmt.Fprintf(w, "\n%d passed, %d failed, %d regressed; %d model calls, $%.4f\n",
		rep.Passed, rep.Failed, rep.Regressed, rep.Usage.ModelCalls, rep.Usage.CostUsd)
	return rep.OK(), nil
}
