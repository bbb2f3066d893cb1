package prompt_test

import (
	"errors"
	"fmt"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/prompt"
)

func ExampleRender() {
	drafter, err := agent.Define(agent.Spec{
		ID:           "acme.contract-drafter",
		Version:      "1.0.0",
		Name:         "Contract Drafter",
		Instructions: "You draft contract clauses for {{ firmName }}. Today is {{ today }}.",
		Parameters:   []agent.PromptParameter{{Name: "firmName", Type: "string"}},
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
	})
	if err != nil {
		panic(err)
	}

	res, err := prompt.Render(drafter, prompt.Context{
		Parameters: map[string]any{"firmName": "Globex"},
		Now:        time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Text)
	fmt.Println(res.Context["now"])

	// A missing parameter is an error naming it, never an empty string.
	_, err = prompt.Render(drafter, prompt.Context{})
	var missing *agents.MissingParameterError
	if errors.As(err, &missing) {
		fmt.Println(agents.CodeOf(err), missing.Name)
	}
	// Output:
	// You draft contract clauses for Globex. Today is 2026-03-04.
	// 2026-03-04T09:00:00Z
	// missing-parameter firmName
}
