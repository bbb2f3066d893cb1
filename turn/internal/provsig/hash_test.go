package provsig

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/kindgi/agents/bindings"
)

// TestHashes pins the hashes records hold: SHA-256 in hex, a record's of
// its JSON with the signature, and the signed bytes without it.
func TestHashes(t *testing.T) {
	sum := sha256.Sum256([]byte("prompt"))
	if got, want := HashString("prompt"), hex.EncodeToString(sum[:]); got != want || HashBytes([]byte("prompt")) != want {
		t.Errorf("HashString = %s, want %s", got, want)
	}
	rec := bindings.ProvenanceRecord{TenantID: "t", RunID: "r", KeyID: "k", Signature: []byte{1, 2, 3}}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := RecordHash(rec); err != nil || got != HashBytes(b) {
		t.Errorf("RecordHash = %s, %v; want %s", got, err, HashBytes(b))
	}
	signed, err := SignedBytes(rec)
	if err != nil {
		t.Fatal(err)
	}
	unsigned := rec
	unsigned.Signature = nil
	if want, _ := json.Marshal(unsigned); !bytes.Equal(signed, want) {
		t.Errorf("SignedBytes = %s, want %s", signed, want)
	}
}
