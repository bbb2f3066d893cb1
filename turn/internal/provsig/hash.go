// Package provsig holds what a provenance record's integrity rests on: the
// SHA-256 hashes a record names prompts, messages, tool calls' inputs and
// outputs and child records by, the bytes its Ed25519 signature covers,
// and the verification of a signed record together with the tree of
// child-run records it embeds.
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

// AppendMessageHashes appends to dst the SHA-256 (hex) of each message's
// JSON (journalcodec.Marshal: encoding/json's bytes, without reflection).
func AppendMessageHashes(dst []string, msgs []bindings.ChatMessage) ([]string, error) {
	var buf []byte
	for i := range msgs {
		b, err := journalcodec.Marshal(buf, &msgs[i], nil)
		if err != nil {
			return dst, err
		}
		dst = append(dst, HashBytes(b))
		buf = b
	}
	return dst, nil
}

// AppendToolCalls appends to dst the provenance of each tool call: its
// identity, the hash of its input and, when it did not fail, of its
// output; its status is ok, or failed for a call with an error.
func AppendToolCalls(dst []bindings.ProvenanceToolCall, calls []bindings.TraceToolCall, ok, failed string) []bindings.ProvenanceToolCall {
	for _, c := range calls {
		pc := bindings.ProvenanceToolCall{ID: c.ID, ToolID: c.ToolID, ToolVersion: c.ToolVersion, InputHash: HashBytes(c.Input), Status: ok}
		if c.Error != "" {
			pc.Status = failed
		} else {
			pc.OutputHash = HashBytes(c.Output)
		}
		dst = append(dst, pc)
	}
	return dst
}
