package main

import (
	"fmt"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/providers/openai"
)

// config holds the command-line choices.
type config struct {
	provider string
	model    string
}

// defaultOpenAIModel is the model -provider openai uses without -model.
const defaultOpenAIModel = "gpt-4o-mini"

// chooseProvider is the one place a model provider is chosen.
func chooseProvider(cfg config) (bindings.Provider, error) {
	switch cfg.provider {
	case "", "scripted":
		if cfg.model != "" {
			return nil, fmt.Errorf("-model applies to -provider openai only")
		}
		return scriptedProvider(), nil
	case "openai":
		model := cfg.model
		if model == "" {
			model = defaultOpenAIModel
		}
		// Prices of models outside openai.DefaultModels are unknown: cost
		// is then reported as 0 and the cost budget cannot bind.
		models := []bindings.ModelInfo{{ID: model, Features: []string{"tool-use"}}}
		for _, m := range openai.DefaultModels {
			if m.ID == model {
				models[0] = m
			}
		}
		return openai.New(&openai.Options{Models: models}), nil
	}
	return nil, fmt.Errorf("unknown -provider %q (want scripted or openai)", cfg.provider)
}
