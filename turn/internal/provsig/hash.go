// Package provsig holds what a provenance record's integrity rests on: the
// SHA-256 hashes a record names prompts, messages and child records by,
// the bytes its Ed25519 signature covers, and the verification of a
// signed record together with the tree of child-run records it embeds.
package provsig

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/journalcodec"
)

// HashString is the SHA-256 (hex) of s.
func HashString(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// HashBytes is the SHA-256 (hex) of b.
func HashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// SignedBytes is what a provenance signature covers: the record's JSON
// (encoding/json, fields in declaration order) with Signature empty.
func SignedBytes(rec bindings.ProvenanceRecord) ([]byte, error) {
	rec.Signature = nil
	return journalcodec.Marshal(nil, &rec, nil)
}

// RecordHash is the hash a parent's record names a child's by: SHA-256
// (hex) of the child's record as JSON, its signature included.
func RecordHash(rec bindings.ProvenanceRecord) (string, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return "", err
	}
	return HashBytes(b), nil
}
