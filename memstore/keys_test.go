package memstore_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/kindgi/agents/memstore"
)

// TestKeysHandOutCopies: SigningKey returns the same key id and key for
// a tenant each time, as copies a caller may scribble on; PublicKey is the
// key's public half; the id is the tenant and the public key's SHA-256
// prefix; a seed makes the keys reproducible and per tenant.
func TestKeysHandOutCopies(t *testing.T) {
	ctx := t.Context()
	keys := memstore.NewKeys([]byte("seed"))
	id, priv, err := keys.SigningKey(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	want := append(ed25519.PrivateKey(nil), priv...)
	sum := sha256.Sum256(priv[32:])
	if wantID := "t1:" + hex.EncodeToString(sum[:8]); id != wantID {
		t.Fatalf("key id = %q, want %q", id, wantID)
	}
	clear(priv)
	id2, priv2, err := keys.SigningKey(ctx, "t1")
	if err != nil || id2 != id || !bytes.Equal(priv2, want) {
		t.Fatalf("second SigningKey = %q, %x, %v; want %q, %x (the caller's write must not reach the key)", id2, priv2, err, id, want)
	}
	pub, err := keys.PublicKey(ctx, id)
	if err != nil || !bytes.Equal(pub, want[32:]) {
		t.Fatalf("PublicKey = %x, %v; want %x", pub, err, want[32:])
	}
	clear(pub)
	if pub2, _ := keys.PublicKey(ctx, id); !bytes.Equal(pub2, want[32:]) {
		t.Fatal("a write to PublicKey's result reached the key")
	}
	if !ed25519.Verify(publicKey(t, keys, id), []byte("m"), ed25519.Sign(priv2, []byte("m"))) {
		t.Fatal("the key's halves do not belong together")
	}
	_, again, _ := memstore.NewKeys([]byte("seed")).SigningKey(ctx, "t1")
	_, other, _ := keys.SigningKey(ctx, "t2")
	if !bytes.Equal(again, want) || bytes.Equal(other, want) {
		t.Fatal("seeded keys are not reproducible per tenant")
	}
}

func publicKey(t *testing.T, keys *memstore.Keys, id string) ed25519.PublicKey {
	t.Helper()
	pub, err := keys.PublicKey(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return pub
}
