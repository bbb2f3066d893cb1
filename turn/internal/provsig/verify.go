package provsig

import (
	"context"
	"crypto/ed25519"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// Verify checks rec's signature with the public key its KeyID names, and
// the chain of its child runs: each record rec.SubRuns names by hash is
// there, hashes to that, belongs to the child run and tenant, and
// verifies in turn (verifySubRuns). An unsigned record, an unknown key or
// a signature that does not match is *agents.InvalidMessageError; a key
// provider failure keeps its code.
func Verify(ctx context.Context, rec bindings.ProvenanceRecord, keys bindings.KeyProvider) error {
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
	msg, err := SignedBytes(rec)
	if err != nil {
		return &agents.InvalidMessageError{Reason: "provenance record does not encode: " + err.Error()}
	}
	if !ed25519.Verify(pub, msg, rec.Signature) {
		return &agents.InvalidMessageError{Reason: "provenance signature of run " + rec.RunID + " does not verify"}
	}
	return verifySubRuns(ctx, rec, keys)
}

// verifySubRuns checks the child records rec names: each one named by
// hash is embedded, hashes to what rec names, is the record of that child
// run in rec's tenant, and verifies (Verify, so down the tree).
// A broken link is *agents.InvalidMessageError naming the child run.
func verifySubRuns(ctx context.Context, rec bindings.ProvenanceRecord, keys bindings.KeyProvider) error {
	for _, sr := range rec.SubRuns {
		broken := func(why string) error {
			return &agents.InvalidMessageError{Reason: "provenance of run " + rec.RunID + ": child run " + sr.RunID + ": " + why}
		}
		if sr.RecordHash == "" {
			if sr.Record != nil {
				return broken("a record is embedded that no hash names")
			}
			continue
		}
		if sr.Record == nil {
			return broken("the record named by hash " + sr.RecordHash + " is missing")
		}
		h, err := RecordHash(*sr.Record)
		if err != nil {
			return broken("the record does not encode: " + err.Error())
		}
		if h != sr.RecordHash {
			return broken("the record hashes to " + h + ", not to " + sr.RecordHash)
		}
		if sr.Record.RunID != sr.RunID || sr.Record.TenantID != rec.TenantID {
			return broken("the record is of run " + sr.Record.RunID + " of tenant " + sr.Record.TenantID)
		}
		if err := Verify(ctx, *sr.Record, keys); err != nil {
			return err
		}
	}
	return nil
}
