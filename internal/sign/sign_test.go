package sign

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// TestRFC8032Vectors signs the test vectors of RFC 8032, section 7.1
// (TEST 1, 2, 3 and SHA(abc)) and checks each against the RFC's signature
// and crypto/ed25519.
func TestRFC8032Vectors(t *testing.T) {
	for _, v := range []struct{ name, seed, pub, msg, sig string }{
		{"TEST 1", "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
			"d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
			"e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"},
		{"TEST 2", "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
			"3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
			"92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"},
		{"TEST 3", "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
			"fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
			"6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"},
		{"TEST SHA(abc)", "833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42",
			"ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf",
			"ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
			"dc2a4459e7369633a52b1bf277839a00201009a3efbf3ecb69bea2186c26b58909351fc9ac90b3ecfdfbc7c66431e0303dca179c138ac17ad9bef1177331a704"},
	} {
		t.Run(v.name, func(t *testing.T) {
			priv := ed25519.NewKeyFromSeed(unhex(t, v.seed))
			if got := hex.EncodeToString(priv[32:]); got != v.pub {
				t.Fatalf("public key = %s, want %s", got, v.pub)
			}
			k, err := NewKey(priv)
			if err != nil {
				t.Fatal(err)
			}
			msg := unhex(t, v.msg)
			got := k.Sign(msg)
			if hex.EncodeToString(got) != v.sig {
				t.Fatalf("signature = %x, want %s", got, v.sig)
			}
			if std := ed25519.Sign(priv, msg); !bytes.Equal(got, std) {
				t.Fatalf("signature = %x, crypto/ed25519 = %x", got, std)
			}
			if !ed25519.Verify(ed25519.PublicKey(priv[32:]), msg, got) {
				t.Fatal("crypto/ed25519.Verify rejects the signature")
			}
		})
	}
}

// TestSignMatchesStdlib holds Sign to crypto/ed25519.Sign over many
// seeds and message lengths, including the SHA-512 block boundaries.
func TestSignMatchesStdlib(t *testing.T) {
	msg := make([]byte, 0, 4096)
	for i := range 300 {
		seed := sha256.Sum256(fmt.Appendf(nil, "seed %d", i))
		priv := ed25519.NewKeyFromSeed(seed[:])
		msg = msg[:0]
		for len(msg) < i*7%1100 {
			msg = append(msg, byte(len(msg)*31+i))
		}
		checkSame(t, priv, msg)
	}
}

// FuzzSignMatchesStdlib holds Sign to crypto/ed25519.Sign for any seed
// and message.
func FuzzSignMatchesStdlib(f *testing.F) {
	f.Add(make([]byte, 32), []byte(nil))
	f.Add(bytes.Repeat([]byte{0xff}, 32), []byte(`{"tenantId":"t1","runId":"r1"}`))
	f.Add([]byte("0123456789abcdef0123456789abcdef"), bytes.Repeat([]byte{'x'}, 239))
	f.Fuzz(func(t *testing.T, seed, msg []byte) {
		if len(seed) != ed25519.SeedSize {
			s := sha256.Sum256(seed)
			seed = s[:]
		}
		checkSame(t, ed25519.NewKeyFromSeed(seed), msg)
	})
}

func checkSame(t *testing.T, priv ed25519.PrivateKey, msg []byte) {
	t.Helper()
	k, err := NewKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	got, std := k.Sign(msg), ed25519.Sign(priv, msg)
	if !bytes.Equal(got, std) {
		t.Fatalf("seed %x, message %x: signature = %x, crypto/ed25519 = %x", priv[:32], msg, got, std)
	}
	viaCache, err := Sign(priv, msg)
	if err != nil || !bytes.Equal(viaCache, std) {
		t.Fatalf("Sign = %x, %v; want %x", viaCache, err, std)
	}
}

// TestNewKeyRejectsBadKeys: a key of the wrong length, or whose public
// half is not its seed's, is ErrBadKey (its signatures would not verify).
func TestNewKeyRejectsBadKeys(t *testing.T) {
	good := ed25519.NewKeyFromSeed(make([]byte, 32))
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	mixed := append(append(ed25519.PrivateKey(nil), good[:32]...), other[32:]...)
	for name, priv := range map[string]ed25519.PrivateKey{
		"nil": nil, "short": good[:63], "long": append(append(ed25519.PrivateKey(nil), good...), 0),
		"foreign public half": mixed,
	} {
		if _, err := NewKey(priv); !errors.Is(err, ErrBadKey) {
			t.Errorf("%s: NewKey = %v, want ErrBadKey", name, err)
		}
		if _, err := Sign(priv, []byte("m")); !errors.Is(err, ErrBadKey) {
			t.Errorf("%s: Sign = %v, want ErrBadKey", name, err)
		}
	}
}

// TestCacheKeepsOneExpansionPerKey: the same key bytes, even in another
// slice, find the same expansion; the cache never holds more than its
// bound, and a forgotten key is expanded again, correctly.
func TestCacheKeepsOneExpansionPerKey(t *testing.T) {
	c := NewCache(2)
	key := func(i byte) ed25519.PrivateKey { return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{i}, 32)) }
	a1, err := c.Key(key(1))
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := c.Key(key(1))
	if a1 != a2 {
		t.Fatal("a copy of the same key was expanded again")
	}
	for i := byte(2); i < 10; i++ {
		if _, err := c.Key(key(i)); err != nil {
			t.Fatal(err)
		}
		if n := c.Len(); n > 2 {
			t.Fatalf("cache holds %d keys, bound 2", n)
		}
	}
	k, err := c.Key(key(1))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := k.Sign([]byte("again")), ed25519.Sign(key(1), []byte("again")); !bytes.Equal(got, want) {
		t.Fatalf("re-expanded key signs %x, want %x", got, want)
	}
	if c := NewCache(0); c.max != 1 {
		t.Fatalf("NewCache(0) bound = %d, want 1", c.max)
	}
}

// TestCacheConcurrent signs with a few keys from many goroutines (run
// with -race).
func TestCacheConcurrent(t *testing.T) {
	c := NewCache(3)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{byte((g + i) % 5)}, 32))
				k, err := c.Key(priv)
				if err != nil {
					t.Error(err)
					return
				}
				msg := []byte{byte(g), byte(i)}
				if !bytes.Equal(k.Sign(msg), ed25519.Sign(priv, msg)) {
					t.Error("concurrent signature differs from crypto/ed25519")
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkSign is one signature of a provenance-sized message with a
// cached expansion, against crypto/ed25519.Sign of a fresh copy of the key
// (what a key provider that copies its key gets).
func BenchmarkSign(b *testing.B) {
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	msg := bytes.Repeat([]byte{'x'}, 1200)
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Sign(priv, msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stdlib-copy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ed25519.Sign(append(ed25519.PrivateKey(nil), priv...), msg)
		}
	})
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
