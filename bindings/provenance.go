package bindings

import (
	"context"
	"crypto/ed25519"
	"time"
)

// ProvenanceToolCall records one tool call by the hashes of its input and
// output (SHA-256, hex).
type ProvenanceToolCall struct {
	ID          string `json:"id"`
	ToolID      string `json:"toolId"`
	ToolVersion string `json:"toolVersion"`
	InputHash   string `json:"inputHash"`
	OutputHash  string `json:"outputHash,omitempty"`
	Status      string `json:"status"`
}

// ProvenanceGuardrail records one guardrail outcome.
type ProvenanceGuardrail struct {
	ID     string `json:"id"`
	Passed bool   `json:"passed"`
	Action string `json:"action"`
	Reason string `json:"reason,omitempty"`
}

// ProvenanceHandoff records one handoff of a turn: the tool call that
// handed the turn over, the agent that made it and the agent that took it
// (id@version as the turn resolved it), and the SHA-256 (hex) of the
// target's rendered instructions. The last handoff's target answered.
type ProvenanceHandoff struct {
	ToolCallID       string `json:"toolCallId"`
	FromAgentID      string `json:"fromAgentId"`
	FromAgentVersion string `json:"fromAgentVersion"`
	AgentID          string `json:"agentId"`
	AgentVersion     string `json:"agentVersion"`
	PromptHash       string `json:"promptHash"`
}

// ProvenanceSubRun records one child run of a turn (a sub-agent call) by
// the hash of its own provenance record: RecordHash is the SHA-256 (hex)
// of the child's signed record as JSON (encoding/json, Signature
// included), and Record is that record, embedded so that verifying the
// parent verifies the tree without another store read. A child that left
// no record (it failed, or recorded none) has neither.
type ProvenanceSubRun struct {
	RunID        string            `json:"runId"`
	AgentID      string            `json:"agentId"`
	AgentVersion string            `json:"agentVersion"`
	Status       string            `json:"status"`
	RecordHash   string            `json:"recordHash,omitempty"`
	Record       *ProvenanceRecord `json:"record,omitempty"`
}

// ProvenanceRecord says what produced a turn's response. The turn signs
// the canonical JSON of the record without Signature (Ed25519).
type ProvenanceRecord struct {
	TenantID       string `json:"tenantId"`
	RunID          string `json:"runId"`
	ConversationID string `json:"conversationId,omitempty"`
	TurnNumber     int    `json:"turnNumber"`
	// ParticipantID is who the turn answered (Input.ParticipantID; omitted
	// when empty, so records without one sign as before).
	ParticipantID  string                `json:"participantId,omitempty"`
	AgentID        string                `json:"agentId"`
	AgentVersion   string                `json:"agentVersion"`
	FlowID         string                `json:"flowId"`
	FlowVersion    string                `json:"flowVersion"`
	Provider       string                `json:"provider"`
	Model          string                `json:"model"`
	PromptHash     string                `json:"promptHash"`
	MessageHashes  []string              `json:"messageHashes"`
	ToolCalls      []ProvenanceToolCall  `json:"toolCalls"`
	RetrievedFacts []string              `json:"retrievedFacts"`
	Guardrails     []ProvenanceGuardrail `json:"guardrails"`
	Usage          Usage                 `json:"usage"`
	CreatedAt      time.Time             `json:"createdAt"`
	// Handoffs are the turn's handoffs in order, and AnsweredBy the
	// answering agent (id@version) when a handoff made it another than
	// AgentID's; SubRuns are the turn's child runs. All are omitted when
	// empty, so the records of turns without them keep their bytes (and
	// signatures).
	Handoffs   []ProvenanceHandoff `json:"handoffs,omitempty"`
	AnsweredBy string              `json:"answeredBy,omitempty"`
	SubRuns    []ProvenanceSubRun  `json:"subRuns,omitempty"`
	KeyID      string              `json:"keyId"`
	Signature  []byte              `json:"signature,omitempty"`
}

// ProvenanceEmitter stores or publishes provenance records; Emit is
// idempotent per (tenant, run id).
type ProvenanceEmitter interface {
	Emit(ctx context.Context, rec ProvenanceRecord) error
}

// KeyProvider supplies signing keys. SigningKey returns the key a tenant
// signs with now; PublicKey finds a key by id for verification.
type KeyProvider interface {
	SigningKey(ctx context.Context, tenantID string) (keyID string, key ed25519.PrivateKey, err error)
	PublicKey(ctx context.Context, keyID string) (ed25519.PublicKey, error)
}

// ProvenanceBindings groups what persist-provenance needs. A nil Emitter
// skips provenance; a nil Keys stores it unsigned.
type ProvenanceBindings struct {
	Emitter ProvenanceEmitter
	Keys    KeyProvider
}
