package turn_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/turn"
)

// provenanceSources are sources whose JSON the journal codec writes
// itself (ASCII) and ones it leaves to encoding/json (non-ASCII text, a
// time with a zone, HTML-special characters).
func provenanceSources() map[string]turn.ProvenanceSource {
	base := turn.ProvenanceSource{
		TenantID: "t1", RunID: "run-1", ConversationID: "conv-1", TurnNumber: 3, ParticipantID: "p1",
		AgentID: "a", AgentVersion: "1.2.0", Route: turn.ProviderRef{Provider: "fake", Model: "m"},
		Prompt: "You are terse.",
		Messages: []bindings.ChatMessage{
			{Role: "system", Content: "You are terse."},
			{Role: "user", Content: "Find the NDA clause."},
			{Role: "assistant", ToolCalls: []bindings.ToolCall{{ID: "c1", Name: "clause_search", Arguments: json.RawMessage(`{"q":"nda"}`)}}},
			{Role: "tool", ToolCallID: "c1", Content: `{"clauses":[1,2]}`},
		},
		ToolCalls: []bindings.TraceToolCall{
			{ID: "c1", ToolID: "clause_search", ToolVersion: "1.0.0", Input: json.RawMessage(`{"q":"nda"}`), Output: json.RawMessage(`{"clauses":[1,2]}`)},
			{ID: "c2", ToolID: "mail", ToolVersion: "2.0.0", Input: json.RawMessage(`{}`), Error: "denied"},
		},
		Guardrails: []turn.GuardrailOutcome{{ID: "g1", Action: "block", Passed: true}},
		Usage:      turn.Usage{InputTokens: 10, OutputTokens: 5, CostUsd: 0.25},
		CreatedAt:  time.Date(2026, 12, 2, 13, 0, 0, 123456789, time.UTC),
	}
	odd := base
	odd.Messages = append([]bindings.ChatMessage{}, base.Messages...)
	odd.Messages[1].Content = "Trouvez la clause « NDA » <b>&</b>\u2028 ✓"
	odd.AgentID = "agent-é"
	odd.CreatedAt = base.CreatedAt.In(time.FixedZone("CET", 3600))
	return map[string]turn.ProvenanceSource{"ascii": base, "left to encoding/json": odd}
}

// TestSignedProvenanceMatchesReference: the record's message hashes, the
// bytes signed and the signature are what encoding/json and
// crypto/ed25519 make of it — the journal codec and internal/sign are
// only faster ways to the same bytes — and the record verifies.
func TestSignedProvenanceMatchesReference(t *testing.T) {
	keys := memstore.NewKeys([]byte("provenance-test"))
	for name, src := range provenanceSources() {
		t.Run(name, func(t *testing.T) {
			rec, err := turn.DefaultProvenanceBuilder{}.Build(src)
			if err != nil {
				t.Fatal(err)
			}
			for i, m := range src.Messages {
				b, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256(b)
				if want := hex.EncodeToString(sum[:]); rec.MessageHashes[i] != want {
					t.Errorf("message %d hash = %s, want SHA-256 of its encoding/json %s", i, rec.MessageHashes[i], want)
				}
			}
			if err := turn.SignProvenance(t.Context(), &rec, keys); err != nil {
				t.Fatal(err)
			}
			keyID, priv, err := keys.SigningKey(t.Context(), src.TenantID)
			if err != nil {
				t.Fatal(err)
			}
			if rec.KeyID != keyID {
				t.Fatalf("KeyID = %q, want %q", rec.KeyID, keyID)
			}
			unsigned := rec
			unsigned.Signature = nil
			msg, err := json.Marshal(unsigned)
			if err != nil {
				t.Fatal(err)
			}
			if want := ed25519.Sign(priv, msg); !bytes.Equal(rec.Signature, want) {
				t.Fatalf("Signature = %x, want ed25519.Sign of the record's encoding/json %x", rec.Signature, want)
			}
			if err := turn.VerifyProvenance(t.Context(), rec, keys); err != nil {
				t.Fatalf("VerifyProvenance: %v", err)
			}
			rec.MessageHashes[1] = rec.MessageHashes[0]
			if err := turn.VerifyProvenance(t.Context(), rec, keys); agents.CodeOf(err) != agents.CodeInvalidMessage {
				t.Fatalf("VerifyProvenance(tampered) = %v, want invalid-message", err)
			}
		})
	}
}

// badKeys hands out a 64-byte key whose public half is another key's.
type badKeys struct{ priv ed25519.PrivateKey }

func (k badKeys) SigningKey(context.Context, string) (string, ed25519.PrivateKey, error) {
	return "t1:bad", k.priv, nil
}

func (k badKeys) PublicKey(context.Context, string) (ed25519.PublicKey, error) {
	return ed25519.PublicKey(k.priv[32:]), nil
}

// TestSignProvenanceRejectsMismatchedKey: a key whose halves do not
// belong together would sign records that never verify; signing fails
// with persistence-error instead, and the record stays unsigned.
func TestSignProvenanceRejectsMismatchedKey(t *testing.T) {
	a := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	b := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32))
	mixed := append(append(ed25519.PrivateKey{}, a[:32]...), b[32:]...)
	rec := bindings.ProvenanceRecord{TenantID: "t1", RunID: "r1"}
	err := turn.SignProvenance(t.Context(), &rec, badKeys{mixed})
	if agents.CodeOf(err) != agents.CodePersistence {
		t.Fatalf("SignProvenance = %v, want persistence-error", err)
	}
	if len(rec.Signature) != 0 {
		t.Fatalf("Signature = %x, want none", rec.Signature)
	}
}

// BenchmarkSignProvenance is SignProvenance alone on a built record: the
// key provider's call, the signed bytes and one Ed25519 signature.
func BenchmarkSignProvenance(b *testing.B) {
	keys := memstore.NewKeys([]byte("bench"))
	rec, err := turn.DefaultProvenanceBuilder{}.Build(provenanceSources()["ascii"])
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		r := rec
		if err := turn.SignProvenance(ctx, &r, keys); err != nil {
			b.Fatal(err)
		}
	}
}
