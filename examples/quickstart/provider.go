package main

import (
	"fmt"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/providers/anthropic"
	"github.com/kindgi/agents/providers/openai"
	"github.com/kindgi/agents/turn"
)

// config holds the command-line choices.
type config struct {
	provider string
	model    string
	// stream prints the answer as it arrives (openai and anthropic).
	stream bool
}

// Default models of -provider openai and -provider anthropic without
// -model.
const (
	defaultOpenAIModel    = "gpt-4o-mini"
	defaultAnthropicModel = "claude-sonnet-4-5"
)

// chooseProvider is the one place a model provider is chosen: the
// scripted one (no network), openai (OPENAI_API_KEY, OPENAI_BASE_URL) or
// anthropic (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL). Both HTTP providers
// stream; without -stream the turn is given the provider without its
// streaming, so it calls Generate.
func chooseProvider(cfg config) (bindings.Provider, error) {
	var p bindings.Provider
	switch cfg.provider {
	case "", "scripted":
		if cfg.model != "" {
			return nil, fmt.Errorf("-model applies to -provider openai or anthropic only")
		}
		if cfg.stream {
			return nil, fmt.Errorf("-stream applies to -provider openai or anthropic only (the scripted provider does not stream)")
		}
		return scriptedProvider(), nil
	case "openai":
		model := orDefault(cfg.model, defaultOpenAIModel)
		p = openai.New(&openai.Options{Models: modelTable(model, openai.DefaultModels)})
	case "anthropic":
		model := orDefault(cfg.model, defaultAnthropicModel)
		p = anthropic.New(&anthropic.Options{Models: modelTable(model, anthropic.DefaultModels)})
	default:
		return nil, fmt.Errorf("unknown -provider %q (want scripted, openai or anthropic)", cfg.provider)
	}
	if !cfg.stream {
		p = generateOnly{p}
	}
	return p, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// modelTable is the one-model table of model: the provider's default entry
// when it has one, else a model with tool use and unknown prices (cost is
// then reported as 0 and the cost budget cannot bind).
func modelTable(model string, defaults []bindings.ModelInfo) []bindings.ModelInfo {
	for _, m := range defaults {
		if m.ID == model {
			return []bindings.ModelInfo{m}
		}
	}
	return []bindings.ModelInfo{{ID: model, Features: []string{"tool-use"}}}
}

// generateOnly hides a provider's streaming: the turn calls Generate.
type generateOnly struct{ bindings.Provider }

// midLine is set while streamed text is being printed.
var midLine bool

// printDelta prints the text of a model.call.delta event as it arrives
// and reports whether e was one; before any other event it ends the line
// of streamed text.
func printDelta(e turn.Event) bool {
	if d, ok := e.(turn.ModelCallDeltaEvent); ok {
		if d.Delta.Text != "" {
			if !midLine {
				fmt.Print("answer> ")
			}
			fmt.Print(d.Delta.Text)
			midLine = true
		}
		return true
	}
	if midLine {
		fmt.Println()
		midLine = false
	}
	return false
}
