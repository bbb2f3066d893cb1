package pgstore

import (
	"bytes"
	"encoding/json"
	"fmt"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
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
// JSON. A json.RawMessage doc is embedded as is (it must be valid JSON in
// UTF-8); anything else is marshalled. A document that jsonb cannot hold
// although it is valid JSON (a "\u0000" or lone surrogate escape in a
// string, a number beyond numeric's range, nesting deeper than 512) is
// wrapped as its JSON text instead: {"v": CurrentPayloadVersion, "json":
// "<doc as JSON text>"}, which any jsonb column holds and Unwrap reads
// back as the same document. A doc that is not valid JSON, or does not
// marshal (a NaN), is a *agents.PersistenceError marked Permanent: storing
// it again fails again.
func Wrap(doc any) (json.RawMessage, error) {
	var raw json.RawMessage
	switch d := doc.(type) {
	case json.RawMessage:
		raw = d
	default:
		b, err := json.Marshal(doc)
		if err != nil {
			return nil, &agents.PersistenceError{Op: "wrap payload", Err: err, Permanent: true}
		}
		raw = b
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("null")
	}
	if bindings.CheckJSON("document", raw) != nil {
		return nil, &agents.PersistenceError{Op: "wrap payload", Err: fmt.Errorf("document is not valid JSON"), Permanent: true}
	}
	return wrapValid(raw)
}

// envelopePrefix and envelopeSuffix enclose a document in its envelope as
// Wrap writes it.
const (
	envelopePrefix = `{"v":1,"doc":`
	envelopeSuffix = `}`
)

// wrapValid is Wrap of raw, valid JSON in UTF-8: the envelope is written
// around the document's bytes (jsonb compacts and orders what it stores,
// so they need no compaction here).
func wrapValid(raw []byte) (json.RawMessage, error) {
	return appendWrapValid(make([]byte, 0, len(envelopePrefix)+len(raw)+len(envelopeSuffix)), raw)
}

// appendWrapValid appends wrapValid(raw) to dst.
func appendWrapValid(dst, raw []byte) ([]byte, error) {
	out, _, err := appendWrapScan(dst, raw)
	return out, err
}

// appendWrapScan is appendWrapValid, and reports whether raw is compact
// (see jsonbScan): compacted(raw) is raw.
func appendWrapScan(dst, raw []byte) (out []byte, compact bool, err error) {
	safe, compact := jsonbScan(raw)
	if !safe {
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return dst, false, &agents.PersistenceError{Op: "wrap payload", Err: err, Permanent: true}
		}
		env, err := json.Marshal(textEnvelope{V: CurrentPayloadVersion, JSON: buf.String()})
		return append(dst, env...), false, err
	}
	dst = append(dst, envelopePrefix...)
	if !compact {
		raw = bytes.TrimSpace(raw)
	}
	dst = append(dst, raw...)
	return append(dst, envelopeSuffix...), compact, nil
}

// textEnvelope is the envelope of a document jsonb cannot hold: its JSON
// text as a string.
type textEnvelope struct {
	V    int    `json:"v"`
	JSON string `json:"json"`
}

// Unwrap reads an envelope. It fails with *MalformedEnvelopeError when raw
// is not a JSON object with an integer "v" and a "doc" (or, for a document
// Wrap stored as JSON text, a "json" string holding a valid document), and
// with
// *UnsupportedPayloadVersionError when v is below 1 or above
// CurrentPayloadVersion. The document comes back compacted.
func Unwrap(raw []byte) (Envelope, error) {
	if doc, ok := unwrapFast(raw); ok {
		return Envelope{V: CurrentPayloadVersion, Doc: doc}, nil
	}
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
		text, isText := fields["json"]
		if !isText {
			return Envelope{}, &MalformedEnvelopeError{Reason: `missing "doc"`}
		}
		var s string
		if err := json.Unmarshal(text, &s); err != nil {
			return Envelope{}, &MalformedEnvelopeError{Reason: `"json" is not a string`}
		}
		doc = json.RawMessage(s)
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
		return Envelope{}, &MalformedEnvelopeError{Reason: "the document is not valid JSON"}
	}
	return Envelope{V: v, Doc: buf.Bytes()}, nil
}

// storedPrefix is how jsonb prints the start of an envelope of version 1
// (it orders keys by length: "v" comes before "doc" and "json").
const storedPrefix = `{"v": 1, "doc": `

// unwrapFast reads the common envelope without decoding it into a map: an
// object that starts with "v" 1 and "doc" as jsonb prints it (or as Wrap
// writes it) and holds nothing after the document. ok is false for
// anything else, which Unwrap then reads in full. The document comes
// back compacted; json.Compact also refuses a "document" that is not one
// value, as it would be were more keys to follow it.
func unwrapFast(raw []byte) (json.RawMessage, bool) {
	var rest []byte
	switch {
	case bytes.HasPrefix(raw, []byte(storedPrefix)):
		rest = raw[len(storedPrefix):]
	case bytes.HasPrefix(raw, []byte(envelopePrefix)):
		rest = raw[len(envelopePrefix):]
	default:
		return nil, false
	}
	if len(rest) == 0 || rest[len(rest)-1] != '}' {
		return nil, false
	}
	doc := rest[:len(rest)-1]
	var buf bytes.Buffer
	buf.Grow(len(doc))
	if json.Compact(&buf, doc) != nil {
		return nil, false
	}
	return buf.Bytes(), true
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

// wrapOpt wraps the payload field for a nullable JSONB column: an empty
// payload is stored as NULL, one that is not valid JSON is refused with
// *agents.InvalidMessageError (bindings.CheckJSON).
func wrapOpt(field string, doc json.RawMessage) ([]byte, error) {
	return wrapOptChecked(field, doc, false)
}

// wrapOptChecked is wrapOpt; trusted skips bindings.CheckJSON: the caller
// vouches for doc (journal.CommitInput.Trusted).
func wrapOptChecked(field string, doc json.RawMessage, trusted bool) ([]byte, error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil, nil
	}
	if !trusted {
		if err := bindings.CheckJSON(field, doc); err != nil {
			return nil, err
		}
	}
	return wrapValid(doc)
}

// appendWrapOpt appends wrapOpt(field, doc) to dst; null is true when
// the payload is stored as NULL (nothing appended), compact when doc is
// compact (compacted(doc) is doc; see jsonbScan). trusted skips
// bindings.CheckJSON: the caller vouches for doc (journal.CommitInput.Trusted).
func appendWrapOpt(dst []byte, field string, doc json.RawMessage, trusted bool) (out []byte, null, compact bool, err error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		return dst, true, false, nil
	}
	if !trusted {
		if err := bindings.CheckJSON(field, doc); err != nil {
			return dst, false, false, err
		}
	}
	out, compact, err = appendWrapScan(dst, doc)
	return out, false, compact, err
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

// unwrapStored is unwrapOpt of the text of a jsonb column that is not
// NULL, the document appended to dst (nil: a new slice of its own). It
// reads the envelope jsonb prints, {"v": 1, "doc": ...}, without
// json.Compact's validation: jsonb prints only valid JSON. Anything else
// is read by Unwrap, whose document never shares raw's memory.
func unwrapStored(dst, raw []byte) (json.RawMessage, error) {
	n := len(dst)
	if doc, ok := bytes.CutPrefix(raw, []byte(storedPrefix)); ok && len(doc) > 0 && doc[len(doc)-1] == '}' {
		doc = doc[:len(doc)-1]
		if dst == nil {
			dst = make([]byte, 0, len(doc))
		}
		if out, ok := compactStored(dst, doc); ok {
			return out, nil
		}
	}
	env, err := Unwrap(raw)
	if err != nil || dst == nil {
		return env.Doc, err
	}
	return append(dst[:n], env.Doc...), nil
}

// compactStored appends to dst the valid JSON text src with the spaces
// between tokens elided, as json.Compact would; ok is false when src
// holds more than one value at the top level (the "doc" of an envelope
// with more keys after it).
func compactStored(dst, src []byte) ([]byte, bool) {
	depth := 0
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(src) {
				return dst, false
			}
			dst = append(dst, src[i:j+1]...)
			i = j
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			if depth == 0 {
				return dst, false
			}
		}
		dst = append(dst, src[i])
	}
	return dst, depth == 0
}
