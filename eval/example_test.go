package eval_test

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/eval"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// A dataset written by hand, one case a line, with expectations.
func ExampleReadDataset() {
	ds, err := eval.ReadDataset(strings.NewReader(`{"id":"greet","userMessage":"Hello!","expect":{"contains":["Hello"]}}
{"id":"hours","userMessage":"When are you open?","expect":{"matches":["\\d+ ?(am|pm)"]}}
`))
	if err != nil {
		panic(err)
	}
	for _, c := range ds.Cases {
		fmt.Println(c.ID, c.Expect.Contains, c.Expect.Matches)
	}
	// Output:
	// greet [Hello] []
	// hours [] [\d+ ?(am|pm)]
}

// Evaluate a version on hand-written cases: one line a case, then the
// totals.
func ExampleRun() {
	a, err := agent.Define(agent.Spec{ID: "acme.desk", Version: "2.0.0", Name: "Desk", Instructions: "You staff the front desk.",
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}}})
	if err != nil {
		panic(err)
	}
	b := turn.StoreBindings(memstore.New(nil)) // only read: eval runs on stores of its own
	b.Providers = bindings.Providers{scripted.New([]scripted.Response{
		scripted.Say("Hello! How can I help?"),
		scripted.Say("We open at nine."),
	}, nil)}
	ds := eval.Dataset{Cases: []eval.Case{
		{ID: "greet", UserMessage: "Hello!", Expect: &eval.Expect{Contains: []string{"Hello"}}},
		{ID: "hours", UserMessage: "When are you open?", Expect: &eval.Expect{Matches: []string{`\d+ ?(am|pm)`}}},
	}}
	rep, err := eval.Run(context.Background(), ds, eval.Options{Agent: a, Bindings: b})
	if err != nil {
		panic(err)
	}
	for _, c := range rep.Cases {
		fmt.Println(strings.TrimSpace(c.Outcome() + " " + c.ID + " " + c.Reason))
	}
	fmt.Printf("%d passed, %d failed\n", rep.Passed, rep.Failed)
	if err := rep.WriteJUnit(io.Discard); err != nil { // a file, for CI
		panic(err)
	}
	// Output:
	// pass greet
	// fail hours matches /\d+ ?(am|pm)/: the answer does not match /\d+ ?(am|pm)/
	// 1 passed, 1 failed
}
