package bindings

import (
	"context"
	"encoding/json"
	"time"
)

// Fact is one memory fact.
type Fact struct {
	TenantID       string          `json:"tenantId"`
	ID             string          `json:"id"`
	Type           string          `json:"type"`
	ProjectID      string          `json:"projectId,omitempty"`
	ConversationID string          `json:"conversationId,omitempty"`
	Text           string          `json:"text"`
	Data           json.RawMessage `json:"data,omitempty"`
	// Embedding is the fact's vector for semantic retrieval; a store may
	// compute it on write from an EmbeddingRegistry.
	Embedding []float32 `json:"embedding,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// MemoryQuery asks for facts. Scope is agent.ScopeSameConversation (facts
// of ConversationID), agent.ScopeSameProject (facts of ProjectID) or
// agent.ScopeTenant (every fact of the tenant). Mode is keyword (rank by
// BM25-like relevance of Text to Query), semantic (cosine similarity of
// QueryEmbedding to the fact's embedding), both (reciprocal-rank fusion of
// the two), or "" (the latest facts of each type, newest first, at most
// Limit per type).
type MemoryQuery struct {
	TenantID       string    `json:"tenantId"`
	ProjectID      string    `json:"projectId,omitempty"`
	ConversationID string    `json:"conversationId,omitempty"`
	Types          []string  `json:"types"`
	Scope          string    `json:"scope"`
	Limit          int       `json:"limit"`
	Mode           string    `json:"mode,omitempty"`
	Query          string    `json:"query,omitempty"`
	QueryEmbedding []float32 `json:"queryEmbedding,omitempty"`
}

// ScoredFact is a fact with its retrieval score (higher is better; 0 for
// the latest-facts mode).
type ScoredFact struct {
	Fact  Fact    `json:"fact"`
	Score float64 `json:"score"`
}

// MemoryQueryBinding answers memory queries.
//
// Results are ordered best first, ties broken by CreatedAt descending then
// ID ascending, and at most Limit long (Limit ≤ 0 means 10; in the
// latest-facts mode the limit applies per type). A fact matches only when
// its Type is one of Types (empty Types match nothing) and it lies in
// Scope. Keyword mode returns only facts sharing at least one term with
// Query; semantic mode only facts with an embedding (an empty
// QueryEmbedding matches nothing); both mode fuses the two full rankings
// with score Σ 1/(60 + rank), ranks from 1. An empty tenant, an unknown
// Mode or an unknown Scope is *agents.InvalidMessageError.
type MemoryQueryBinding interface {
	QueryFacts(ctx context.Context, q MemoryQuery) ([]ScoredFact, error)
}

// MemoryStore is a MemoryQueryBinding that also stores facts. PutFact is
// idempotent per (tenant, ID): a second put replaces the fact. An empty ID
// gets a generated one and a zero CreatedAt means now; an empty tenant or
// Type is *agents.InvalidMessageError. PutFact returns the stored fact.
type MemoryStore interface {
	MemoryQueryBinding
	PutFact(ctx context.Context, f Fact) (Fact, error)
}
