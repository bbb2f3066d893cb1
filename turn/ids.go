package turn

import (
	"crypto/rand"
	"encoding/hex"
)

// The ids a drive derives from its run id and step keys (message,
// approval and request ids) are drive.Journal.DerivedID's; what follows
// is the fresh id of a run or lease owner.

// newID returns a fresh id from the NewID seam or 128 random bits.
func newID(b *Bindings) string {
	if b.NewID != nil {
		return b.NewID()
	}
	var buf [16]byte
	var text [32]byte
	_, _ = rand.Read(buf[:])
	hex.Encode(text[:], buf[:])
	return string(text[:]) // one allocation (EncodeToString makes two)
}
