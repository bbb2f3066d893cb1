package provsig

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/sign"
	"github.com/kindgi/agents/turn/internal/drive"
)

// Sign signs rec with the tenant's current key: it sets KeyID, then
// Signature, an Ed25519 signature of the record's JSON with Signature
// empty (SignedBytes). A key provider failure is returned with its code
// (persistence-error when it has none).
func Sign(ctx context.Context, rec *bindings.ProvenanceRecord, keys bindings.KeyProvider) error {
	keyID, key, err := keys.SigningKey(ctx, rec.TenantID)
	if err != nil {
		return drive.Coded(err, "get signing key")
	}
	if len(key) != ed25519.PrivateKeySize {
		return &agents.PersistenceError{Op: "get signing key: not an Ed25519 private key"}
	}
	rec.KeyID = keyID
	msg, err := SignedBytes(*rec)
	if err != nil {
		return &agents.PersistenceError{Op: "encode provenance", Err: err, Permanent: true}
	}
	// sign.Sign is ed25519.Sign with the key's expansion kept per key.
	sig, err := sign.Sign(key, msg)
	if err != nil {
		return &agents.PersistenceError{Op: "sign provenance with key " + keyID, Err: err, Permanent: true}
	}
	rec.Signature = sig
	return nil
}

// JournalReader reads a run's journal (bindings.RunBinding.ReadJournal).
type JournalReader interface {
	ReadJournal(ctx context.Context, tenantID, runID string) ([]bindings.JournalEntry, error)
}

// AddSubRuns completes subs, the child runs of a turn as its record lists
// them: each one whose Status is completed gets the record its step node
// (persist-provenance) journaled, read from the child's own journal
// through runs (the child ended before the parent records), and that
// record's hash. A child that failed, or recorded none, stays without
// one.
func AddSubRuns(ctx context.Context, runs JournalReader, tenantID string, subs []bindings.ProvenanceSubRun, completed, node string) error {
	for i := range subs {
		ps := &subs[i]
		if ps.Status != completed {
			continue
		}
		rec, err := childRecord(ctx, runs, tenantID, ps.RunID, node)
		if err != nil {
			return err
		}
		if rec != nil {
			h, err := RecordHash(*rec)
			if err != nil {
				return &agents.PersistenceError{Op: "encode the provenance of child run " + ps.RunID, Err: err, Permanent: true}
			}
			ps.RecordHash, ps.Record = h, rec
		}
	}
	return nil
}

// childRecord is the provenance record child run childID journaled in
// its step node (nil when it recorded none).
func childRecord(ctx context.Context, runs JournalReader, tenantID, childID, node string) (*bindings.ProvenanceRecord, error) {
	entries, err := runs.ReadJournal(ctx, tenantID, childID)
	if err != nil {
		return nil, drive.Coded(err, "read the journal of child run "+childID)
	}
	for i := len(entries) - 1; i >= 0; i-- {
		e := &entries[i]
		if e.Key != node || e.Status != bindings.StepCompleted {
			continue
		}
		var rec *bindings.ProvenanceRecord
		if err := json.Unmarshal(e.Output, &rec); err != nil {
			return nil, &agents.RunJournalUnavailableError{RunID: childID, Err: fmt.Errorf("decode step %s: %w", node, err)}
		}
		return rec, nil
	}
	return nil, nil
}
