// Package sign computes pure Ed25519 signatures (RFC 8032, section 5.1.6)
// from a key whose expansion is done once: the SHA-512 of the seed, split
// into the clamped secret scalar and the nonce prefix, and the check that
// the key's public half is the one its seed makes.
//
// crypto/ed25519.Sign re-derives the expansion on every call unless it is
// handed the very same slice again (its cache is keyed by the slice's
// address), and a key provider that returns a copy of its key on every
// call — as it should, so that no caller can alter the key it keeps —
// defeats that cache. Here the expansion is kept per key, by the key's
// bytes, in a small bounded cache. Sign also encodes R once (the standard
// library encodes it twice, a field inversion each).
//
// Signatures are deterministic, so TestSignMatchesStdlib and
// FuzzSignMatchesStdlib hold Sign byte for byte to crypto/ed25519.Sign,
// and TestRFC8032Vectors to the RFC's test vectors. Verification is
// crypto/ed25519.Verify: nothing here verifies.
//
// The group arithmetic is filippo.io/edwards25519, the library the
// standard library's own implementation was taken from.
package sign

import (
	"crypto/ed25519"
	"crypto/sha512"
	"crypto/subtle"
	"errors"
	"sync"

	"filippo.io/edwards25519"
)

// ErrBadKey is returned for a private key that is not 64 bytes, or whose
// second half is not the public key of its seed (a signature made with it
// would not verify).
var ErrBadKey = errors.New("sign: not an Ed25519 private key")

// Key is an expanded Ed25519 private key. It is immutable once made, and
// safe for concurrent use.
type Key struct {
	s      edwards25519.Scalar
	prefix [32]byte
	pub    [32]byte
}

// NewKey expands priv (seed followed by public key, as crypto/ed25519
// holds it). It costs one SHA-512 and one scalar base multiplication.
func NewKey(priv ed25519.PrivateKey) (*Key, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, ErrBadKey
	}
	h := sha512.Sum512(priv[:ed25519.SeedSize])
	k := &Key{}
	if _, err := k.s.SetBytesWithClamping(h[:32]); err != nil {
		return nil, ErrBadKey
	}
	copy(k.prefix[:], h[32:])
	copy(k.pub[:], priv[ed25519.SeedSize:])
	a := new(edwards25519.Point).ScalarBaseMult(&k.s)
	if subtle.ConstantTimeCompare(a.Bytes(), k.pub[:]) != 1 {
		return nil, ErrBadKey
	}
	return k, nil
}

// Sign returns the Ed25519 signature of msg, equal to
// ed25519.Sign(priv, msg) for the priv k was made from.
func (k *Key) Sign(msg []byte) []byte {
	var digest [sha512.Size]byte
	// r = SHA-512(prefix || M) mod l; R = rB.
	h := sha512.New()
	h.Write(k.prefix[:])
	h.Write(msg)
	r, err := edwards25519.NewScalar().SetUniformBytes(h.Sum(digest[:0]))
	if err != nil {
		panic("sign: a 64-byte digest is not a uniform scalar: " + err.Error())
	}
	var rBytes [32]byte
	copy(rBytes[:], new(edwards25519.Point).ScalarBaseMult(r).Bytes())
	// k = SHA-512(R || A || M) mod l; S = (r + k·s) mod l.
	h.Reset()
	h.Write(rBytes[:])
	h.Write(k.pub[:])
	h.Write(msg)
	c, err := edwards25519.NewScalar().SetUniformBytes(h.Sum(digest[:0]))
	if err != nil {
		panic("sign: a 64-byte digest is not a uniform scalar: " + err.Error())
	}
	s := edwards25519.NewScalar().MultiplyAdd(c, &k.s, r)
	sig := make([]byte, ed25519.SignatureSize)
	copy(sig[:32], rBytes[:])
	copy(sig[32:], s.Bytes())
	return sig
}

// Cache keeps the expanded keys of up to a fixed number of private keys,
// found by the keys' bytes. It is safe for concurrent use.
type Cache struct {
	max int

	mu   sync.Mutex
	keys map[string]*Key
}

// NewCache returns a cache of at most n keys (at least one).
func NewCache(n int) *Cache {
	return &Cache{max: max(n, 1), keys: make(map[string]*Key)}
}

// Key returns priv's expanded key, expanding it on first sight. A full
// cache forgets an arbitrary key to make room (a provider that rotates
// keys only ever pays one more expansion).
func (c *Cache) Key(priv ed25519.PrivateKey) (*Key, error) {
	c.mu.Lock()
	k, ok := c.keys[string(priv)]
	c.mu.Unlock()
	if ok {
		return k, nil
	}
	k, err := NewKey(priv)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.keys) >= c.max {
		for old := range c.keys {
			delete(c.keys, old)
			break
		}
	}
	c.keys[string(priv)] = k
	return k, nil
}

// Len is the number of keys the cache holds.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.keys)
}

// keys is the process's cache: a tenant's key signs every one of its
// turns, and a process serves a bounded number of tenants at a time.
var keys = NewCache(1024)

// Sign returns ed25519.Sign(priv, msg), with priv's expansion kept in a
// bounded process-wide cache. A key that is not a valid Ed25519 private
// key is ErrBadKey.
func Sign(priv ed25519.PrivateKey, msg []byte) ([]byte, error) {
	k, err := keys.Key(priv)
	if err != nil {
		return nil, err
	}
	return k.Sign(msg), nil
}
