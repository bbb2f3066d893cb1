package retrieve

import (
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
)

// TestQuery: the default limit, the text for every mode but the default,
// the embedding only for semantic and both.
func TestQuery(t *testing.T) {
	emb := []float32{1}
	five := 5
	for _, tt := range []struct {
		in        agent.RetrievalIntent
		limit     int
		text, vec bool
	}{
		{agent.RetrievalIntent{}, agent.DefaultRetrievalLimit, false, false},
		{agent.RetrievalIntent{Mode: agent.ModeSemantic, Limit: &five}, 5, true, true},
		{agent.RetrievalIntent{Mode: agent.ModeBoth}, agent.DefaultRetrievalLimit, true, true},
	} {
		q := Query("t", "p", "c", tt.in, "hello", emb)
		if q.TenantID != "t" || q.ProjectID != "p" || q.ConversationID != "c" || q.Limit != tt.limit ||
			(q.Query == "hello") != tt.text || (q.QueryEmbedding != nil) != tt.vec {
			t.Errorf("Query(%+v) = %+v", tt.in, q)
		}
	}
}

// TestEmbeddingNeedsARegistry: no embedding is asked for when no intent
// needs one; one that does without a registry is model-invocation-failed.
func TestEmbeddingNeedsARegistry(t *testing.T) {
	if v, err := Embedding(t.Context(), []agent.RetrievalIntent{{}}, nil, "", "q"); v != nil || err != nil {
		t.Errorf("no semantic intent: %v, %v", v, err)
	}
	_, err := Embedding(t.Context(), []agent.RetrievalIntent{{Mode: agent.ModeSemantic}}, nil, "", "q")
	if agents.CodeOf(err) != agents.CodeModelInvocationFailed {
		t.Errorf("no registry: %v", err)
	}
}
