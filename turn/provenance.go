package turn

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// persistProvenance is the persist-provenance node: a record of what
// produced the response, signed with the tenant's Ed25519 key (unsigned
// without a key provider) and emitted. A dry run or a turn without an
// emitter records nothing.
func (r *run) persistProvenance(ctx context.Context) error {
	// Emit is idempotent per run: no started entry is needed.
	rec, err := decide(ctx, r, NodePersistProvenance, NodePersistProvenance, func(ctx context.Context, _ string) (*bindings.ProvenanceRecord, error) {
		pb := r.b.Provenance
		if r.in.DryRun || pb.Emitter == nil {
			return nil, nil
		}
		rec := r.provenanceRecord()
		if pb.Keys != nil {
			if err := SignProvenance(ctx, &rec, pb.Keys); err != nil {
				return nil, err
			}
		}
		if err := r.flush(ctx); err != nil {
			return nil, err
		}
		if err := pb.Emitter.Emit(ctx, rec); err != nil {
			return nil, coded(err, "emit provenance")
		}
		return &rec, nil
	})
	r.provenance = rec
	return err
}

// provenanceRecord builds the unsigned record of the turn.
func (r *run) provenanceRecord() bindings.ProvenanceRecord {
	rec := bindings.ProvenanceRecord{
		TenantID: r.tenantID, RunID: r.id, ConversationID: r.in.ConversationID, TurnNumber: r.s.TurnNumber,
		ParticipantID: r.in.ParticipantID,
		AgentID:       r.agent.ID, AgentVersion: r.agent.Version, FlowID: FlowID, FlowVersion: FlowVersion,
		Provider: r.s.Route.Provider, Model: r.s.Route.Model,
		PromptHash:     hashString(r.prompt),
		MessageHashes:  make([]string, 0, len(r.messages)),
		ToolCalls:      make([]bindings.ProvenanceToolCall, 0, len(r.traceCalls)),
		RetrievedFacts: make([]string, 0, len(r.retrieved)),
		Guardrails:     make([]bindings.ProvenanceGuardrail, 0, len(r.outcomes)),
		Usage:          bindings.Usage{InputTokens: r.usage.InputTokens, OutputTokens: r.usage.OutputTokens, CostUsd: r.usage.CostUsd},
		CreatedAt:      r.s.Now,
	}
	for _, m := range r.messages {
		b, _ := json.Marshal(m)
		rec.MessageHashes = append(rec.MessageHashes, hashBytes(b))
	}
	for _, c := range r.traceCalls {
		pc := bindings.ProvenanceToolCall{ID: c.ID, ToolID: c.ToolID, ToolVersion: c.ToolVersion, InputHash: hashBytes(c.Input), Status: toolOK}
		if c.Error != "" {
			pc.Status = toolError
		} else {
			pc.OutputHash = hashBytes(c.Output)
		}
		rec.ToolCalls = append(rec.ToolCalls, pc)
	}
	for _, f := range r.retrieved {
		rec.RetrievedFacts = append(rec.RetrievedFacts, f.Fact.ID)
	}
	for _, o := range r.outcomes {
		rec.Guardrails = append(rec.Guardrails, bindings.ProvenanceGuardrail{ID: o.ID, Passed: o.Passed, Action: o.Action, Reason: o.Reason})
	}
	return rec
}

func hashString(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func hashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// signedBytes is what a provenance signature covers: the record's JSON
// (encoding/json, fields in declaration order) with Signature empty.
func signedBytes(rec bindings.ProvenanceRecord) ([]byte, error) {
	rec.Signature = nil
	return json.Marshal(rec)
}

// SignProvenance signs rec with the tenant's current key: it sets KeyID,
// then Signature, an Ed25519 signature of the record's JSON with Signature
// empty. A key provider failure is returned with its code
// (persistence-error when it has none).
func SignProvenance(ctx context.Context, rec *bindings.ProvenanceRecord, keys bindings.KeyProvider) error {
	keyID, key, err := keys.SigningKey(ctx, rec.TenantID)
	if err != nil {
		return coded(err, "get signing key")
	}
	if len(key) != ed25519.PrivateKeySize {
		return &agents.PersistenceError{Op: "get signing key: not an Ed25519 private key"}
	}
	rec.KeyID = keyID
	msg, err := signedBytes(*rec)
	if err != nil {
		return &agents.PersistenceError{Op: "encode provenance", Err: err, Permanent: true}
	}
	rec.Signature = ed25519.Sign(key, msg)
	return nil
}

// VerifyProvenance checks rec's signature with the public key its KeyID
// names. An unsigned record, an unknown key or a signature that does not
// match is *agents.InvalidMessageError; a key provider failure keeps its
// code.
func VerifyProvenance(ctx context.Context, rec bindings.ProvenanceRecord, keys bindings.KeyProvider) error {
	if len(rec.Signature) == 0 || rec.KeyID == "" {
		return &agents.InvalidMessageError{Reason: "provenance record of run " + rec.RunID + " is not signed"}
	}
	pub, err := keys.PublicKey(ctx, rec.KeyID)
	if err != nil {
		if agents.CodeOf(err) != "" {
			return err
		}
		return &agents.InvalidMessageError{Reason: "provenance key " + rec.KeyID + " is unknown: " + err.Error()}
	}
	if len(pub) != ed25519.PublicKeySize {
		return &agents.InvalidMessageError{Reason: "provenance key " + rec.KeyID + " is not an Ed25519 public key"}
	}
	msg, err := signedBytes(rec)
	if err != nil {
		return &agents.InvalidMessageError{Reason: "provenance record does not encode: " + err.Error()}
	}
	if !ed25519.Verify(pub, msg, rec.Signature) {
		return &agents.InvalidMessageError{Reason: "provenance signature of run " + rec.RunID + " does not verify"}
	}
	return nil
}
