package pgstore

import (
	"bytes"
	"encoding/json"
	"fmt"

	agents "github.com/kindgi/agents"
)

// CurrentPayloadVersion is the envelope version this build writes, and the
// highest it reads.
const CurrentPayloadVersion = 1

// Envelope is how a JSON payload is stored in a JSONB column: the payload
// version and the document.
type Envelope struct {
	V   int             `json:"v"`
	Doc json.RawMessage `json:"doc"`
}

// The envelope errors live in the root package; these aliases give them the
// names the envelope helpers use.
type (
	// EnvelopeError is implemented by *MalformedEnvelopeError and
	// *UnsupportedPayloadVersionError.
	EnvelopeError = agents.EnvelopeError
	// MalformedEnvelopeError reports a stored value that is not a {v, doc}
	// envelope (code malformed-envelope).
	MalformedEnvelopeError = agents.MalformedEnvelopeError
	// UnsupportedPayloadVersionError reports an envelope of a version this
	// build does not read (code unsupported-payload-version).
	UnsupportedPayloadVersionError = agents.UnsupportedPayloadVersionError
)

// Wrap returns the envelope {"v": CurrentPayloadVersion, "doc": doc} as
// JSON. A json.RawMessage doc is embedded as is (it must be valid JSON);
// anything else is marshalled.
func Wrap(doc any) (json.RawMessage, error) {
	var raw json.RawMessage
	switch d := doc.(type) {
	case json.RawMessage:
		raw = d
	default:
		b, err := json.Marshal(doc)
		if err != nil {
			return nil, &agents.PersistenceError{Op: "wrap payload", Err: err}
		}
		raw = b
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("null")
	}
	if !json.Valid(raw) {
		return nil, &agents.PersistenceError{Op: "wrap payload", Err: fmt.Errorf("document is not valid JSON")}
	}
	return json.Marshal(Envelope{V: CurrentPayloadVersion, Doc: raw})
}

// Unwrap reads an envelope. It fails with *MalformedEnvelopeError when raw
// is not a JSON object with an integer "v" and a "doc", and with
// *UnsupportedPayloadVersionError when v is below 1 or above
// CurrentPayloadVersion. The document comes back compacted.
func Unwrap(raw []byte) (Envelope, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return Envelope{}, &MalformedEnvelopeError{Reason: "not a JSON object"}
	}
	vRaw, ok := fields["v"]
	if !ok {
		return Envelope{}, &MalformedEnvelopeError{Reason: `missing "v"`}
	}
	doc, ok := fields["doc"]
	if !ok {
		return Envelope{}, &MalformedEnvelopeError{Reason: `missing "doc"`}
	}
	var v int
	if err := json.Unmarshal(vRaw, &v); err != nil {
		return Envelope{}, &MalformedEnvelopeError{Reason: `"v" is not an integer`}
	}
	if v < 1 || v > CurrentPayloadVersion {
		return Envelope{}, &UnsupportedPayloadVersionError{Version: v, Supported: CurrentPayloadVersion}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, doc); err != nil {
		return Envelope{}, &MalformedEnvelopeError{Reason: `"doc" is not valid JSON`}
	}
	return Envelope{V: v, Doc: buf.Bytes()}, nil
}

// UnwrapInto reads an envelope and decodes its document into dst (a
// pointer). Envelope failures are the errors of Unwrap; a document that
// does not decode into dst is *MalformedEnvelopeError.
func UnwrapInto(raw []byte, dst any) error {
	env, err := Unwrap(raw)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(env.Doc, dst); err != nil {
		return &MalformedEnvelopeError{Reason: "document does not decode: " + err.Error()}
	}
	return nil
}

// MustUnwrap returns the document of an envelope and panics with the
// EnvelopeError of Unwrap when raw is not a readable envelope: the
// counterpart of unwrapOrThrow, for payloads a program wrote itself.
func MustUnwrap(raw []byte) json.RawMessage {
	env, err := Unwrap(raw)
	if err != nil {
		panic(err)
	}
	return env.Doc
}

// wrapOpt wraps a payload for a nullable JSONB column: an empty payload is
// stored as NULL.
func wrapOpt(doc json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil, nil
	}
	return Wrap(doc)
}

// jsonArg passes a wrapped payload as a query argument: as text, which
// every pgx execution mode sends in a form a jsonb parameter accepts
// ([]byte would go out as bytea where pgx does not know the parameter
// type), and nil as NULL.
func jsonArg(raw []byte) any {
	if raw == nil {
		return nil
	}
	return string(raw)
}

// unwrapOpt reads a nullable JSONB envelope column: NULL reads as nil.
func unwrapOpt(raw []byte) (json.RawMessage, error) {
	if raw == nil {
		return nil, nil
	}
	env, err := Unwrap(raw)
	if err != nil {
		return nil, err
	}
	return env.Doc, nil
}
