package turn

import (
	"context"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/provsig"
)

// ProvenanceSource is what a provenance record is built from: a turn's
// identity and what produced its response.
type ProvenanceSource struct {
	TenantID       string
	RunID          string
	ConversationID string
	TurnNumber     int
	ParticipantID  string
	AgentID        string
	AgentVersion   string
	Route          ProviderRef
	// Prompt is the rendered system prompt.
	Prompt string
	// Messages are the messages sent to the model, in order.
	Messages  []bindings.ChatMessage
	ToolCalls []bindings.TraceToolCall
	Retrieved []RetrievedFact
	// Guardrails are the gate's outcomes (EvaluateGate).
	Guardrails []GuardrailOutcome
	Usage      Usage
	CreatedAt  time.Time
	// Handoffs are the turn's handoffs and AnsweredBy the agent
	// (id@version) that answered when a handoff made it another; SubRuns
	// are its child runs, each with its own record (see
	// bindings.ProvenanceSubRun).
	Handoffs   []bindings.ProvenanceHandoff
	AnsweredBy string
	SubRuns    []bindings.ProvenanceSubRun
}

// ProvenanceBuilder builds the unsigned record of a source.
type ProvenanceBuilder interface {
	Build(src ProvenanceSource) (bindings.ProvenanceRecord, error)
}

// DefaultProvenanceBuilder builds the record the turn stores: the flow's
// identity, SHA-256 hashes (hex) of the prompt, of each message's JSON and
// of each tool call's input and output, the retrieved fact ids and the
// guardrail outcomes.
type DefaultProvenanceBuilder struct{}

// Build implements ProvenanceBuilder.
func (DefaultProvenanceBuilder) Build(src ProvenanceSource) (bindings.ProvenanceRecord, error) {
	rec := bindings.ProvenanceRecord{
		TenantID: src.TenantID, RunID: src.RunID, ConversationID: src.ConversationID, TurnNumber: src.TurnNumber,
		ParticipantID: src.ParticipantID,
		AgentID:       src.AgentID, AgentVersion: src.AgentVersion, FlowID: FlowID, FlowVersion: FlowVersion,
		Provider: src.Route.Provider, Model: src.Route.Model,
		PromptHash:     provsig.HashString(src.Prompt),
		MessageHashes:  make([]string, 0, len(src.Messages)),
		ToolCalls:      make([]bindings.ProvenanceToolCall, 0, len(src.ToolCalls)),
		RetrievedFacts: make([]string, 0, len(src.Retrieved)),
		Guardrails:     make([]bindings.ProvenanceGuardrail, 0, len(src.Guardrails)),
		Usage:          bindings.Usage{InputTokens: src.Usage.InputTokens, OutputTokens: src.Usage.OutputTokens, CostUsd: src.Usage.CostUsd},
		CreatedAt:      src.CreatedAt,
		Handoffs:       src.Handoffs,
		AnsweredBy:     src.AnsweredBy,
		SubRuns:        src.SubRuns,
	}
	var err error
	if rec.MessageHashes, err = provsig.AppendMessageHashes(rec.MessageHashes, src.Messages); err != nil {
		return bindings.ProvenanceRecord{}, &agents.PersistenceError{Op: "encode provenance message", Err: err}
	}
	rec.ToolCalls = provsig.AppendToolCalls(rec.ToolCalls, src.ToolCalls, toolOK, toolError)
	for _, f := range src.Retrieved {
		rec.RetrievedFacts = append(rec.RetrievedFacts, f.Fact.ID)
	}
	for _, o := range src.Guardrails {
		rec.Guardrails = append(rec.Guardrails, bindings.ProvenanceGuardrail{ID: o.ID, Passed: o.Passed, Action: o.Action, Reason: o.Reason})
	}
	return rec, nil
}

// ProvenanceBindings are what PersistProvenance runs on (the TypeScript
// package's ProvenanceBindings: newBuilder, emit, emitBinding,
// keyProvider). The turn's Bindings.Provenance (a
// bindings.ProvenanceBindings) supplies EmitBinding (its Emitter) and
// Keys.
type ProvenanceBindings struct {
	// NewBuilder returns the builder of one record (nil:
	// DefaultProvenanceBuilder).
	NewBuilder func() ProvenanceBuilder
	// Emit, when set, receives the signed record once EmitBinding stored
	// it (a bus, a log); it must be idempotent per run, like EmitBinding.
	Emit func(ctx context.Context, rec bindings.ProvenanceRecord) error
	// EmitBinding stores the record (idempotent per tenant and run).
	EmitBinding bindings.ProvenanceEmitter
	// Keys signs the record (nil: unsigned).
	Keys bindings.KeyProvider
}

// PersistProvenance builds the record of src, signs it with the tenant's
// Ed25519 key (SignProvenance; unsigned without Keys), stores it with
// EmitBinding and hands it to Emit, and returns it. With neither
// EmitBinding nor Emit it records nothing and returns nil. Failures keep
// their code (persistence-error when they have none).
func PersistProvenance(ctx context.Context, src ProvenanceSource, b ProvenanceBindings) (*bindings.ProvenanceRecord, error) {
	if b.EmitBinding == nil && b.Emit == nil {
		return nil, nil
	}
	var builder ProvenanceBuilder = DefaultProvenanceBuilder{}
	if b.NewBuilder != nil {
		if nb := b.NewBuilder(); nb != nil {
			builder = nb
		}
	}
	rec, err := builder.Build(src)
	if err != nil {
		return nil, coded(err, "build provenance")
	}
	if b.Keys != nil {
		if err := SignProvenance(ctx, &rec, b.Keys); err != nil {
			return nil, err
		}
	}
	if b.EmitBinding != nil {
		if err := b.EmitBinding.Emit(ctx, rec); err != nil {
			return nil, coded(err, "emit provenance")
		}
	}
	if b.Emit != nil {
		if err := b.Emit(ctx, rec); err != nil {
			return nil, coded(err, "emit provenance")
		}
	}
	return &rec, nil
}

// persistProvenance is the persist-provenance node: PersistProvenance of
// the turn, with Bindings.Provenance's Emitter and Keys. A dry run or a
// turn without an emitter records nothing.
func (r *run) persistProvenance(ctx context.Context) error {
	// Emit is idempotent per run: no started entry is needed.
	rec, err := decide(ctx, r, NodePersistProvenance, NodePersistProvenance, func(ctx context.Context, _ string) (_ *bindings.ProvenanceRecord, err error) {
		pb := r.b.Provenance
		if r.in.DryRun || pb.Emitter == nil {
			return nil, nil
		}
		if err := r.HoldLease(ctx); err != nil {
			return nil, err
		}
		if err := r.loadPrompt(); err != nil {
			return nil, err
		}
		src := r.provenanceSource()
		if src.SubRuns, err = r.subRunProvenance(ctx); err != nil {
			return nil, err
		}
		return PersistProvenance(ctx, src, ProvenanceBindings{EmitBinding: pb.Emitter, Keys: pb.Keys})
	})
	r.provenance = rec
	return err
}

// provenanceSource is what the turn's record is built from.
func (r *run) provenanceSource() ProvenanceSource {
	agentID, agentVersion := r.runAgent()
	return ProvenanceSource{
		TenantID: r.tenantID, RunID: r.id, ConversationID: r.in.ConversationID, TurnNumber: r.s.TurnNumber,
		ParticipantID: r.in.ParticipantID, AgentID: agentID, AgentVersion: agentVersion,
		Route: r.s.Route, Prompt: r.prompt, Messages: r.messages, ToolCalls: r.traceCalls,
		Retrieved: r.retrieved, Guardrails: r.outcomes, Usage: r.usage, CreatedAt: r.s.Now,
		Handoffs: r.handoffList(), AnsweredBy: r.answeredBy(),
	}
}

// SignProvenance signs rec with the tenant's current key: it sets KeyID,
// then Signature, an Ed25519 signature of the record's JSON with Signature
// empty. A key provider failure is returned with its code
// (persistence-error when it has none).
func SignProvenance(ctx context.Context, rec *bindings.ProvenanceRecord, keys bindings.KeyProvider) error {
	return provsig.Sign(ctx, rec, keys)
}

// VerifyProvenance checks rec's signature with the public key its KeyID
// names, and the chain of its child runs: each record rec.SubRuns names
// by hash is there, hashes to that, belongs to the child run and tenant,
// and verifies in turn. An unsigned record, an unknown key or a signature
// that does not match is *agents.InvalidMessageError; a key provider
// failure keeps its code.
func VerifyProvenance(ctx context.Context, rec bindings.ProvenanceRecord, keys bindings.KeyProvider) error {
	return provsig.Verify(ctx, rec, keys)
}
