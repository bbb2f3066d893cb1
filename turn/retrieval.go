package turn

import (
	"context"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/retrieve"
)

// RetrievedFact pairs a fact with the intent that fetched it and its score.
type RetrievedFact struct {
	Fact   bindings.Fact         `json:"fact"`
	Score  float64               `json:"score"`
	Intent agent.RetrievalIntent `json:"intent"`
}

// RetrievalRequest is what RunRetrievals needs of a turn.
type RetrievalRequest struct {
	TenantID       string
	ProjectID      string
	ConversationID string
	// Query is the text keyword and semantic modes match: the user message.
	Query   string
	Intents []agent.RetrievalIntent
}

// RetrievalBindings are what RunRetrievals runs on; Embeddings and
// EmbeddingModel are needed only by semantic and both modes.
type RetrievalBindings struct {
	Memory         bindings.MemoryQueryBinding
	Embeddings     bindings.EmbeddingRegistry
	EmbeddingModel string
}

// RunRetrievals runs each intent as one memory query, in order, with the
// query text (and, for semantic and both modes, its embedding, computed
// once). A fact fetched by two intents is kept once, with the first. The
// facts come back without their embeddings. A failed query is the
// binding's coded error; an embedding failure is
// *agents.ModelInvocationError.
func RunRetrievals(ctx context.Context, req RetrievalRequest, b RetrievalBindings) ([]RetrievedFact, error) {
	if len(req.Intents) == 0 {
		return []RetrievedFact{}, nil
	}
	if b.Memory == nil {
		return nil, &agents.InvalidBindingsError{Reason: "retrieval needs a memory binding"}
	}
	embedding, err := retrieve.Embedding(ctx, req.Intents, b.Embeddings, b.EmbeddingModel, req.Query)
	if err != nil {
		return nil, err
	}
	out := []RetrievedFact{}
	err = retrieve.Run(ctx, b.Memory, req.TenantID, req.ProjectID, req.ConversationID, req.Query, req.Intents, embedding,
		func(f bindings.ScoredFact, in agent.RetrievalIntent) {
			out = append(out, RetrievedFact{Fact: f.Fact, Score: f.Score, Intent: in})
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// FormatRetrievedForPrompt builds the prompt section that shows the model
// the retrieved facts, one line per fact with its id and type; "" when
// there are none.
func FormatRetrievedForPrompt(facts []RetrievedFact) string {
	return retrieve.Format(facts, func(f *RetrievedFact) *bindings.Fact { return &f.Fact })
}

// runRetrievals is the run-retrievals node.
func (r *run) runRetrievals(ctx context.Context) error {
	facts, err := decide(ctx, r, NodeRunRetrievals, NodeRunRetrievals, func(ctx context.Context, _ string) ([]RetrievedFact, error) {
		facts, err := RunRetrievals(ctx, RetrievalRequest{
			TenantID: r.tenantID, ProjectID: r.in.ProjectID, ConversationID: r.in.ConversationID,
			Query: r.in.UserMessage, Intents: r.in.Agent.Retrieval,
		}, RetrievalBindings{Memory: r.b.Memory, Embeddings: r.b.Embeddings, EmbeddingModel: r.b.EmbeddingModel})
		if err != nil {
			return nil, err
		}
		ids := make([]string, len(facts))
		for i, f := range facts {
			ids[i] = f.Fact.ID
		}
		emit(r, ctx, RetrievalCompletedEvent{RunID: r.id, FactIDs: ids})
		return facts, nil
	})
	r.retrieved = facts
	return err
}
