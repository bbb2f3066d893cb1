package turn

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"

	"github.com/kindgi/agents/bindings"
)

// hashedIDLen is the length of the hashed tail of a derived id that would
// be too long: "~" and 40 hex digits (160 bits of SHA-256).
const hashedIDLen = 1 + 40

// derivedID is the id of what step key of run runID stores or sends: a
// message id, an approval id, a request id. It is runID + "/" + key, which
// is deterministic and unique within the run. When that is longer than
// bindings.MaxIDLength (a long run id with a long tool call id), it is the
// longest prefix of runID that fits, "/", "~" and 40 hex digits of the
// SHA-256 of runID + "/" + key: still deterministic, still unique, and an
// id every store holds.
func derivedID(runID, key string) string {
	if len(runID)+1+len(key) <= bindings.MaxIDLength {
		return runID + "/" + key
	}
	sum := sha256.Sum256([]byte(runID + "/" + key))
	return idPrefix(runID) + "~" + hex.EncodeToString(sum[:])[:hashedIDLen-1]
}

// idPrefix is how every derived id of runID begins: runID + "/", with runID
// cut (at a rune boundary) when a hashed tail would not fit after it.
func idPrefix(runID string) string {
	n := bindings.MaxIDLength - 1 - hashedIDLen
	if len(runID) <= n {
		return runID + "/"
	}
	for n > 0 && !utf8.RuneStart(runID[n]) {
		n--
	}
	return runID[:n] + "/"
}
