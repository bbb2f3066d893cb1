// Package retrieve is what a turn's retrieval intents ask of memory: the
// query text's embedding, computed once when an intent needs it (semantic
// and both modes), one memory query per intent, the queries run keeping
// each fact once (Run, behind turn.RunRetrievals), and the prompt section
// of the facts (Format).
package retrieve

import (
	"context"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
)

// needsEmbedding reports whether an intent of mode matches on the query's
// embedding.
func needsEmbedding(mode string) bool {
	return mode == agent.ModeSemantic || mode == agent.ModeBoth
}

// Embedding is the embedding of query with model, computed when one of
// intents needs it (nil when none does). Without a registry or a model,
// or when the registry fails (uncoded) or returns no vector, it is
// *agents.ModelInvocationError; a coded failure keeps its code.
func Embedding(ctx context.Context, intents []agent.RetrievalIntent, reg bindings.EmbeddingRegistry, model, query string) ([]float32, error) {
	for _, in := range intents {
		if !needsEmbedding(in.Mode) {
			continue
		}
		if reg == nil || model == "" {
			return nil, &agents.ModelInvocationError{Provider: "embeddings", Model: model, Message: "semantic retrieval needs an embedding registry and model"}
		}
		vs, err := reg.Embed(ctx, model, []string{query})
		if err != nil {
			if agents.CodeOf(err) != "" {
				return nil, err
			}
			return nil, &agents.ModelInvocationError{Provider: "embeddings", Model: model, Err: err}
		}
		if len(vs) != 1 {
			return nil, &agents.ModelInvocationError{Provider: "embeddings", Model: model, Message: "embedding registry returned no vector"}
		}
		return vs[0], nil
	}
	return nil, nil
}

// Query is the memory query of intent in: its types, scope, mode and
// limit (agent.DefaultRetrievalLimit when it sets none), the query text
// for every mode but the default, and the embedding for semantic and both
// modes.
func Query(tenantID, projectID, conversationID string, in agent.RetrievalIntent, query string, embedding []float32) bindings.MemoryQuery {
	limit := agent.DefaultRetrievalLimit
	if in.Limit != nil {
		limit = *in.Limit
	}
	q := bindings.MemoryQuery{
		TenantID: tenantID, ProjectID: projectID, ConversationID: conversationID,
		Types: in.Types, Scope: in.Scope, Limit: limit, Mode: in.Mode,
	}
	if in.Mode != "" {
		q.Query = query
	}
	if needsEmbedding(in.Mode) {
		q.QueryEmbedding = embedding
	}
	return q
}
