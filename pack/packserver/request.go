package packserver

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/kindgi/agents/pack"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// decoded is a valid request: the message, and for an invoke its input
// decoded for the input schema.
type decoded struct {
	tool  *pack.ToolInvoke
	check *pack.CheckInvoke
	input any
}

// decodeRequest decodes and validates a request body. The common case is
// checked by hand against the protocol schema's request definition (v 2,
// kind, the required members and their types; the schema is otherwise
// open), which costs a fraction of a schema validation. Anything the fast
// path does not plainly accept goes to pack.DecodeRequest, so every
// invalid-request answer, and every request that is valid in a less
// common spelling (v written 2.0, escaped kind, a key differing only in
// case from a member), is decided by the schema itself. The fast path
// never accepts a body the schema rejects; TestDecodeRequestAgreesWithPack
// and FuzzDecodeRequest check both paths agree.
func decodeRequest(body []byte) (decoded, *pack.ErrorMessage) {
	if d, ok := fastDecode(body); ok {
		return d, nil
	}
	msg, bad := pack.DecodeRequest(body)
	if bad != nil {
		return decoded{}, bad
	}
	switch m := msg.(type) {
	case *pack.ToolInvoke:
		return decoded{tool: m, input: json.RawMessage(m.Input)}, nil
	case *pack.CheckInvoke:
		return decoded{check: m}, nil
	}
	return decoded{}, invalidRequest("not a request message")
}

type object = map[string]json.RawMessage

var (
	invokeKeys  = []string{"v", "kind", "tool", "input", "ctx"}
	checkKeys   = []string{"v", "kind", "check", "config", "trace"}
	toolKeys    = []string{"id", "version"}
	checkIDKeys = []string{"id"}
	ctxKeys     = []string{"tenantId", "runId", "requestId", "env", "secrets", "config"}
)

// fastDecode accepts only bodies the request schema plainly accepts.
func fastDecode(body []byte) (decoded, bool) {
	var top object
	if json.Unmarshal(body, &top) != nil || string(top["v"]) != "2" {
		return decoded{}, false
	}
	switch string(top["kind"]) {
	case `"invoke"`:
		return fastInvoke(top)
	case `"check-invoke"`:
		return fastCheck(top)
	}
	return decoded{}, false
}

func fastInvoke(top object) (decoded, bool) {
	m := &pack.ToolInvoke{V: pack.Version, Kind: pack.KindInvoke}
	tool, ok := members(top["tool"], toolKeys)
	if !ok || !plain(top, invokeKeys) || !str(tool["id"], &m.Tool.ID, true) || !str(tool["version"], &m.Tool.Version, false) {
		return decoded{}, false
	}
	input, found := top["input"]
	if !found {
		return decoded{}, false
	}
	ctx, ok := members(top["ctx"], ctxKeys)
	if !ok || !str(ctx["tenantId"], &m.Ctx.TenantID, true) || !str(ctx["runId"], &m.Ctx.RunID, true) ||
		!str(ctx["requestId"], &m.Ctx.RequestID, false) || !obj(ctx["env"], &m.Ctx.Env) ||
		!obj(ctx["secrets"], &m.Ctx.Secrets) || !obj(ctx["config"], &m.Ctx.Config) {
		return decoded{}, false
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(input))
	if err != nil {
		return decoded{}, false
	}
	m.Input = input
	return decoded{tool: m, input: inst}, true
}

func fastCheck(top object) (decoded, bool) {
	m := &pack.CheckInvoke{V: pack.Version, Kind: pack.KindCheckInvoke}
	check, ok := members(top["check"], checkIDKeys)
	if !ok || !plain(top, checkKeys) || !str(check["id"], &m.Check.ID, true) ||
		!isObject(top["config"]) || !isObject(top["trace"]) {
		return decoded{}, false
	}
	m.Config, m.Trace = top["config"], top["trace"]
	return decoded{check: m}, true
}

// members decodes a JSON object's members; ok is false for anything else
// or when a key differs from a known one only in case.
func members(raw json.RawMessage, known []string) (object, bool) {
	if !isObject(raw) {
		return nil, false
	}
	var o object
	if json.Unmarshal(raw, &o) != nil {
		return nil, false
	}
	return o, plain(o, known)
}

// plain reports whether no key of o folds onto a known key without being
// it: encoding/json would let such a key override the member.
func plain(o object, known []string) bool {
	for k := range o {
		for _, want := range known {
			if k != want && strings.EqualFold(k, want) {
				return false
			}
		}
	}
	return true
}

// str decodes a string member into dst; absent is fine unless required.
func str(raw json.RawMessage, dst *string, required bool) bool {
	if raw == nil {
		return !required
	}
	return len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, dst) == nil
}

// obj decodes an optional object member into dst.
func obj(raw json.RawMessage, dst *map[string]any) bool {
	if raw == nil {
		return true
	}
	return isObject(raw) && json.Unmarshal(raw, dst) == nil
}

func isObject(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '{' }
