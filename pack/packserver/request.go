package packserver

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/kindgi/agents/pack"
)

// decodeRequest is pack.DecodeRequest with a cheaper fast path in front:
// profiling demo.echo showed pack's map-based fast path to be half the
// service's own cost per call. fastRequest decodes straight into structs
// and accepts only bodies the protocol schema certainly accepts; anything
// else, and every invalid body, is decided by pack.DecodeRequest.
// TestFastRequestAgreesWithPack and FuzzFastRequest check the agreement.
func decodeRequest(body []byte) (any, *pack.ErrorMessage) {
	if msg, ok := fastRequest(body); ok {
		return msg, nil
	}
	return pack.DecodeRequest(body)
}

// wireRequest is the union of the two request shapes, decoded in one
// pass. Scalars and open objects stay raw, so presence, null and type can
// be told apart; tool, check and ctx are structs (a non-object there fails
// the decode, and null leaves their required members absent).
type wireRequest struct {
	V      json.RawMessage `json:"v"`
	Kind   json.RawMessage `json:"kind"`
	Tool   wireRef         `json:"tool"`
	Input  json.RawMessage `json:"input"`
	Ctx    wireCtx         `json:"ctx"`
	Check  wireRef         `json:"check"`
	Config json.RawMessage `json:"config"`
	Trace  json.RawMessage `json:"trace"`
}

type wireRef struct {
	ID      json.RawMessage `json:"id"`
	Version json.RawMessage `json:"version"`
}

type wireCtx struct {
	TenantID  json.RawMessage `json:"tenantId"`
	RunID     json.RawMessage `json:"runId"`
	RequestID json.RawMessage `json:"requestId"`
	Env       json.RawMessage `json:"env"`
	Secrets   json.RawMessage `json:"secrets"`
	Config    json.RawMessage `json:"config"`
}

// memberNames are every member name the wire structs read. encoding/json
// matches names case-insensitively (with Unicode simple folding), so a key
// such as "Tool" next to "tool" would override the member the schema
// checks; bodies with such a key take the schema path.
var memberNames = []string{"v", "kind", "tool", "input", "ctx", "check", "config", "trace",
	"id", "version", "tenantId", "runId", "requestId", "env", "secrets"}

// fastRequest returns a *pack.ToolInvoke or *pack.CheckInvoke for a body
// the request schema plainly accepts, or false.
func fastRequest(body []byte) (any, bool) {
	if !plainKeys(body) {
		return nil, false
	}
	var w wireRequest
	if json.Unmarshal(body, &w) != nil || string(w.V) != "2" { // null leaves V nil
		return nil, false
	}
	switch string(w.Kind) {
	case `"invoke"`:
		m := &pack.ToolInvoke{V: pack.Version, Kind: pack.KindInvoke, Input: w.Input}
		ok := w.Input != nil &&
			str(w.Tool.ID, &m.Tool.ID, true) && str(w.Tool.Version, &m.Tool.Version, false) &&
			str(w.Ctx.TenantID, &m.Ctx.TenantID, true) && str(w.Ctx.RunID, &m.Ctx.RunID, true) &&
			str(w.Ctx.RequestID, &m.Ctx.RequestID, false) && obj(w.Ctx.Env, &m.Ctx.Env) &&
			obj(w.Ctx.Secrets, &m.Ctx.Secrets) && obj(w.Ctx.Config, &m.Ctx.Config)
		return m, ok
	case `"check-invoke"`:
		m := &pack.CheckInvoke{V: pack.Version, Kind: pack.KindCheckInvoke, Config: w.Config, Trace: w.Trace}
		ok := str(w.Check.ID, &m.Check.ID, true) && isObject(w.Config) && isObject(w.Trace)
		return m, ok
	}
	return nil, false
}

// plainKeys reports whether body certainly has no key that encoding/json
// would fold onto a member name without being it. It is conservative: a
// \u escape, a rune folding to an ASCII letter (the Kelvin sign, the long
// s), or any quoted string equal to a member name but for case, even a
// value, makes it false.
func plainKeys(body []byte) bool {
	if bytes.Contains(body, []byte(`\u`)) || bytes.Contains(body, []byte("\u212a")) || bytes.Contains(body, []byte("\u017f")) {
		return false
	}
	for i := 0; i < len(body); i++ {
		if body[i] != '"' {
			continue
		}
		// A string: find its closing quote, skipping escapes.
		j := i + 1
		for j < len(body) && body[j] != '"' {
			if body[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(body) {
			return true // unterminated: json.Unmarshal refuses the body anyway
		}
		s := body[i+1 : j]
		for _, name := range memberNames {
			if len(s) == len(name) && string(s) != name && bytes.EqualFold(s, []byte(name)) {
				return false
			}
		}
		i = j
	}
	return true
}

// str decodes a string member into dst; absent is fine unless required.
// raw is a JSON value the body's decode already checked, so a string
// without escapes, in valid UTF-8, is its bytes between the quotes.
func str(raw json.RawMessage, dst *string, required bool) bool {
	if raw == nil {
		return !required
	}
	if raw[0] != '"' {
		return false
	}
	in := raw[1 : len(raw)-1]
	if bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
		*dst = string(in)
		return true
	}
	return json.Unmarshal(raw, dst) == nil
}

// obj decodes an optional object member into dst.
func obj(raw json.RawMessage, dst *map[string]any) bool {
	return raw == nil || (isObject(raw) && json.Unmarshal(raw, dst) == nil)
}

func isObject(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '{' }
