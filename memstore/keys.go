package memstore

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// ErrUnknownKey is the cause of the error PublicKey returns for a key id it
// never handed out.
var ErrUnknownKey = errors.New("unknown signing key id")

// Keys is an in-memory KeyProvider: each tenant gets one Ed25519 key, made
// on its first SigningKey call. Keys made by NewKeys(nil) are random; with a
// seed they are derived from the seed and the tenant id, so tests and
// examples sign reproducibly. It is safe for concurrent use.
type Keys struct {
	seed []byte

	mu       sync.Mutex
	byTenant map[string]*keyPair
	byID     map[string]*keyPair
}

// keyPair is a key as it was made: its id and both halves, computed once.
type keyPair struct {
	id   string
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
}

var _ bindings.KeyProvider = (*Keys)(nil)

// NewKeys returns a key provider; a nil seed makes random keys, a non-nil
// seed deterministic ones (never use a fixed seed outside tests).
func NewKeys(seed []byte) *Keys {
	k := &Keys{byTenant: map[string]*keyPair{}, byID: map[string]*keyPair{}}
	if seed != nil {
		k.seed = append([]byte{}, seed...)
	}
	return k
}

// SigningKey returns the tenant's key id and a copy of its private key
// (what the caller does with it cannot alter the key). The key id is
// "tenant:" followed by 16 hex digits of the public key's SHA-256,
// computed when the key is made.
func (k *Keys) SigningKey(ctx context.Context, tenantID string) (string, ed25519.PrivateKey, error) {
	if err := alive(ctx); err != nil {
		return "", nil, err
	}
	if tenantID == "" {
		return "", nil, invalid("tenant id is empty")
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if kp, ok := k.byTenant[tenantID]; ok {
		return kp.id, append(ed25519.PrivateKey(nil), kp.priv...), nil
	}
	var priv ed25519.PrivateKey
	if k.seed != nil {
		h := sha256.New()
		h.Write([]byte("memstore.Keys\x00"))
		h.Write(k.seed)
		h.Write([]byte{0})
		h.Write([]byte(tenantID))
		priv = ed25519.NewKeyFromSeed(h.Sum(nil))
	} else {
		var err error
		if _, priv, err = ed25519.GenerateKey(rand.Reader); err != nil {
			return "", nil, &agents.PersistenceError{Op: "generate signing key", Err: err}
		}
	}
	pub := priv.Public().(ed25519.PublicKey)
	sum := sha256.Sum256(pub)
	kp := &keyPair{id: tenantID + ":" + hex.EncodeToString(sum[:8]), priv: priv, pub: pub}
	k.byTenant[tenantID] = kp
	k.byID[kp.id] = kp
	return kp.id, append(ed25519.PrivateKey(nil), priv...), nil
}

// PublicKey returns the public key of a key id SigningKey handed out; an
// unknown id is *agents.PersistenceError wrapping ErrUnknownKey, marked
// Permanent (asking again cannot help).
func (k *Keys) PublicKey(ctx context.Context, keyID string) (ed25519.PublicKey, error) {
	if err := alive(ctx); err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	kp, ok := k.byID[keyID]
	if !ok {
		return nil, &agents.PersistenceError{Op: "public key " + keyID, Err: ErrUnknownKey, Permanent: true}
	}
	return append(ed25519.PublicKey(nil), kp.pub...), nil
}
