package turn

import (
	"bytes"

	"github.com/kindgi/agents/bindings"
)

// The turn vouches for every entry and message it commits
// (journal.CommitInput.Trusted), by
// construction, so that a driver need not check each again:
//   - the tenant, run, conversation, participant and principal ids passed
//     checkInput (bindings.CheckID) before anything was stored; the lease
//     owner is newID's hex; message ids are derivedID (the checked run id,
//     "/", and a key; at most bindings.MaxIDLength bytes, cut at a rune
//     boundary);
//   - step keys are node names, loop iteration numbers, "/attempt/n", and
//     tool call ids that normalizeCalls made 1–64 bytes of UTF-8 without
//     control characters, path-escaped (callKey); nodes are node names;
//     statuses are the four step statuses;
//   - every output is encodeOutput's or encoding/json's encoding of a Go
//     value (valid JSON, invalid UTF-8 replaced), whose raw fields were
//     checked where they entered the turn: a model's tool call arguments
//     by normalizeCalls, a tool's output by invokeTool, the rest (tool
//     schemas and configs, guardrail configs) by encoding/json or rawAsIs
//     when encoded;
//   - a message's metadata is toolMeta's encoding and its tool calls are
//     normalizeCalls'.
//
// The turn's tests run every fixture's store with
// memstore.Options.CheckTrusted, which checks what is vouched for anyway
// and fails the turn on anything that breaks the vouch.

// validJSON reports whether raw, bytes from outside the turn (a model's
// tool call arguments, a tool's output), is one JSON document in UTF-8, as
// the stores' bindings.CheckJSON checks it: the one check they get before
// the turn vouches for them (commit). Unlike json.Valid, it refuses
// invalid UTF-8, which a store would refuse too.
func validJSON(raw []byte) bool {
	return len(bytes.TrimSpace(raw)) > 0 && bindings.CheckJSON("", raw) == nil
}
