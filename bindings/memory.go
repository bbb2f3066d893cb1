package bindings

import (
	"context"
	"encoding/json"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
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

// CheckFact returns an *agents.InvalidMessageError when a fact given to
// PutFact has an empty tenant or Type, an id that breaks the id rules
// (CheckID), Data that is not JSON (CheckJSON) or an Embedding that is
// not finite (CheckEmbedding), and nil otherwise.
func CheckFact(f Fact) error {
	switch {
	case f.TenantID == "":
		return &agents.InvalidMessageError{Reason: "tenant id is empty"}
	case f.Type == "":
		return &agents.InvalidMessageError{Reason: "fact type is empty"}
	}
	return firstErr(CheckID("tenant id", f.TenantID), CheckOptionalID("fact id", f.ID),
		CheckID("fact type", f.Type), CheckOptionalID("project id", f.ProjectID),
		CheckOptionalID("conversation id", f.ConversationID), CheckJSON("fact data", f.Data),
		CheckEmbedding("fact embedding", f.Embedding))
}

// CheckMemoryQuery returns an *agents.InvalidMessageError when a memory
// query has an empty tenant, an id or type that breaks the id rules
// (CheckID), a QueryEmbedding that is not finite or an unknown Mode, and
// nil otherwise. Its Scope is left to the store: each says which scopes
// it answers.
func CheckMemoryQuery(q MemoryQuery) error {
	if err := firstErr(CheckID("tenant id", q.TenantID), CheckOptionalID("project id", q.ProjectID),
		CheckOptionalID("conversation id", q.ConversationID), CheckEmbedding("query embedding", q.QueryEmbedding)); err != nil {
		return err
	}
	for _, t := range q.Types {
		if err := CheckOptionalID("retrieval type", t); err != nil {
			return err
		}
	}
	switch q.Mode {
	case "", agent.ModeKeyword, agent.ModeSemantic, agent.ModeBoth:
		return nil
	}
	return &agents.InvalidMessageError{Reason: "unknown memory mode " + q.Mode}
}
