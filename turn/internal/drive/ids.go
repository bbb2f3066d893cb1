package drive

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/frozen"
)

// hashedIDLen is the length of the hashed tail of a derived id that would
// be too long: "~" and 40 hex digits (160 bits of SHA-256).
const hashedIDLen = 1 + 40

// DerivedID is the id of what step key of run runID stores or sends: a
// message id, an approval id, a request id. It is runID + "/" + key, which
// is deterministic and unique within the run. When that is longer than
// bindings.MaxIDLength (a long run id with a long tool call id), it is the
// longest prefix of runID that fits, "/", "~" and 40 hex digits of the
// SHA-256 of runID + "/" + key: still deterministic, still unique, and an
// id every store holds.
func DerivedID(runID, key string) string {
	if len(runID)+1+len(key) <= bindings.MaxIDLength {
		return runID + "/" + key
	}
	sum := sha256.Sum256([]byte(runID + "/" + key))
	return IDPrefix(runID) + "~" + hex.EncodeToString(sum[:])[:hashedIDLen-1]
}

// idTextChunk is the size of a run's first chunk of derived-id text: a
// turn with one tool call derives seven ids (≈470 bytes with a 32-character
// run id).
const idTextChunk = 512

// DerivedID is DerivedID(j's run id, key) with its bytes in the drive's id
// text (j.idText) rather than an allocation of its own: a drive's ids
// share a few chunks. A chunk's bytes never change once written (a full
// chunk is left as it is and a new one started, and Reset drops the
// drive's chunk rather than reusing it): internal/frozen's invariant, so
// the strings stay valid for as long as anyone holds them
// (TestDerivedIDsSurviveLaterIDs).
func (j *Journal) DerivedID(key string) string {
	n := len(j.runID) + 1 + len(key)
	if n > bindings.MaxIDLength {
		return DerivedID(j.runID, key)
	}
	if cap(j.idText)-len(j.idText) < n {
		j.idText = make([]byte, 0, max(idTextChunk, n))
	}
	start := len(j.idText)
	j.idText = append(j.idText, j.runID...)
	j.idText = append(j.idText, '/')
	j.idText = append(j.idText, key...)
	return frozen.String(j.idText[start:])
}

// IDPrefix is how every derived id of runID begins: runID + "/", with runID
// cut (at a rune boundary) when a hashed tail would not fit after it.
func IDPrefix(runID string) string {
	n := bindings.MaxIDLength - 1 - hashedIDLen
	if len(runID) <= n {
		return runID + "/"
	}
	for n > 0 && !utf8.RuneStart(runID[n]) {
		n--
	}
	return runID[:n] + "/"
}
