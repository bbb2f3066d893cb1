package pack

import (
	"encoding/json"
	"reflect"
	"strings"
)

// DecodeRequest validates body against the request definition and decodes
// it into a *ToolInvoke or a *CheckInvoke. A body that is not a valid
// request (bad JSON, v other than 2, unknown kind, missing fields) gives an
// invalid-request error message carrying the issues, ready to be answered.
//
// The common shape of a request is recognised without running the schema
// (a fast path several times cheaper); anything else goes through the
// schema, which has the last word.
func DecodeRequest(body []byte) (any, *ErrorMessage) { return requests.decode(body) }

// DecodeResponse validates body against the response definition and
// decodes it into a *ToolResult, a *CheckResult or an *ErrorMessage. A
// body that is not a valid response gives an invalid-request error message
// carrying the issues (the client reports it as invalid-response). Like
// DecodeRequest it recognises the common shapes without the schema.
func DecodeResponse(body []byte) (any, *ErrorMessage) { return responses.decode(body) }

// direction is what decoding a request and decoding a response differ by:
// the word in the error messages, the fast path, the schema check and the
// Go type each kind decodes into.
type direction struct {
	name      string
	fastKinds []fastKind
	validate  func(body []byte) []Issue
	kinds     map[string]func() any
}

// fastKind is a kind the fast path recognises, and what reads a message
// of that kind from its top-level object without the schema (false:
// leave it to the schema).
type fastKind struct {
	kind string
	read func(top rawObject) (any, bool)
}

var (
	requests = direction{name: "request", fastKinds: []fastKind{{KindInvoke, fastInvoke}, {KindCheckInvoke, fastCheckInvoke}}, validate: ValidateRequest, kinds: map[string]func() any{
		KindInvoke:      func() any { return new(ToolInvoke) },
		KindCheckInvoke: func() any { return new(CheckInvoke) },
	}}
	// Error messages (rare, and with nested issues) always go through the
	// schema.
	responses = direction{name: "response", fastKinds: []fastKind{{KindResult, fastResult}, {KindCheckResult, fastCheckResult}}, validate: ValidateResponse, kinds: map[string]func() any{
		KindResult:      func() any { return new(ToolResult) },
		KindCheckResult: func() any { return new(CheckResult) },
		KindError:       func() any { return new(ErrorMessage) },
	}}
)

// decode is DecodeRequest or DecodeResponse, by d.
func (d direction) decode(body []byte) (any, *ErrorMessage) {
	if msg, ok := d.fast(body); ok {
		return msg, nil
	}
	notValid := "not a valid " + d.name + " message"
	if issues := d.validate(body); issues != nil {
		return nil, invalid(notValid, issues)
	}
	top, kind, err := normalized(body)
	if err != nil {
		return nil, invalid(notValid+": "+err.Error(), nil)
	}
	newMsg, ok := d.kinds[kind]
	if !ok {
		return nil, invalid("unknown "+d.name+" kind "+kind, nil)
	}
	msg := newMsg()
	if err := decodeExact(top, msg); err != nil {
		return nil, invalid(notValid+": "+err.Error(), nil)
	}
	return msg, nil
}

// normalized parses a message the schema accepted and rewrites v so that
// encoding/json decodes it into the Go types: v becomes 2 however it was
// written (2.0 and 2e0 are 2 to the schema, not to an int field). It
// returns the top-level object and the kind.
func normalized(body []byte) (rawObject, string, error) {
	var top rawObject
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, "", err
	}
	var kind string
	if err := json.Unmarshal(top["kind"], &kind); err != nil {
		return nil, "", err
	}
	top["v"] = json.RawMessage("2")
	return top, kind, nil
}

// decodeExact decodes top into msg with the schema's exact, case-sensitive
// names. encoding/json matches object keys to struct fields without regard
// to case, so {"tool":{"id":"a","ID":"b"}} would decode to id "b" while the
// schema checked "a": keys that differ from a field's name only in case are
// dropped first, in every nested object that decodes into a struct.
func decodeExact(top rawObject, msg any) error {
	exactKeys(reflect.TypeOf(msg).Elem(), top)
	b, err := json.Marshal(top)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, msg)
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// exactKeys removes from obj the case variants of t's JSON field names and
// recurses into the fields that are structs (or pointers to, or slices of,
// structs). Types with their own UnmarshalJSON decide their keys themselves.
func exactKeys(t reflect.Type, obj rawObject) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(unmarshalerType) {
		return
	}
	fields := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	for k, v := range obj {
		ft, exact := fields[k]
		if !exact {
			for name := range fields {
				if strings.EqualFold(name, k) {
					delete(obj, k)
					break
				}
			}
			continue
		}
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() != reflect.Struct {
			continue
		}
		if len(v) > 0 && v[0] == '[' {
			var items []json.RawMessage
			if json.Unmarshal(v, &items) != nil {
				continue
			}
			for i, it := range items {
				var sub rawObject
				if json.Unmarshal(it, &sub) == nil && sub != nil {
					exactKeys(ft, sub)
					items[i], _ = json.Marshal(sub)
				}
			}
			obj[k], _ = json.Marshal(items)
			continue
		}
		var sub rawObject
		if json.Unmarshal(v, &sub) == nil && sub != nil {
			exactKeys(ft, sub)
			obj[k], _ = json.Marshal(sub)
		}
	}
}

// invalid returns an invalid-request error message. A nil issues list gets
// one root issue holding the message, so the answer always says what is
// wrong.
func invalid(message string, issues []Issue) *ErrorMessage {
	if issues == nil {
		issues = []Issue{{InstancePath: "", Message: message}}
	}
	e := NewError(CodeInvalidRequest, message)
	e.Issues = issues
	return e
}

// The fast paths below accept only bodies that certainly satisfy the
// schema: each field is read with exact (case-sensitive) names from a
// map of raw values and checked by its first byte, and v must be written
// exactly 2. Whatever they do not accept — including valid but unusual
// bodies such as v written 2.0 — falls through to the schema. FuzzDecode*
// checks that they agree with the schema.

type rawObject = map[string]json.RawMessage

// object decodes raw as a JSON object; ok is false for anything else.
func object(raw json.RawMessage) (rawObject, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var m rawObject
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	return m, true
}

// str reads a required (or, with optional, an absent) string field.
func str(m rawObject, key string, optional bool, dst *string) bool {
	return field(m, key, optional, '"', dst)
}

// field decodes m[key] into dst when its JSON value opens with open ('"'
// for a string, '{' for an object); an absent field is fine when optional.
func field(m rawObject, key string, optional bool, open byte, dst any) bool {
	raw, ok := m[key]
	if !ok {
		return optional
	}
	if len(raw) == 0 || raw[0] != open {
		return false
	}
	return json.Unmarshal(raw, dst) == nil
}

// isKind reports whether the raw kind is exactly the string want.
func isKind(raw json.RawMessage, want string) bool {
	return len(raw) == len(want)+2 && raw[0] == '"' && string(raw[1:len(raw)-1]) == want
}

// openObject reads an optional JSON object field into *dst (nil when
// absent); ok is false when present but not an object.
func openObject(m rawObject, key string, dst *map[string]any) bool {
	return field(m, key, true, '{', dst)
}

// requiredObject returns a required field that must be a JSON object.
func requiredObject(m rawObject, key string) (json.RawMessage, bool) {
	raw, ok := m[key]
	return raw, ok && len(raw) > 0 && raw[0] == '{'
}

// fast recognises the common shapes without the schema: an object with v
// written 2 and a kind of d.fastKinds that its read accepts.
func (d direction) fast(body []byte) (any, bool) {
	top, ok := object(body)
	if !ok || string(top["v"]) != "2" {
		return nil, false
	}
	kind := top["kind"]
	for _, k := range d.fastKinds {
		if isKind(kind, k.kind) {
			return k.read(top)
		}
	}
	return nil, false
}

func fastInvoke(top rawObject) (any, bool) {
	msg := &ToolInvoke{V: Version, Kind: KindInvoke}
	tool, ok := object(top["tool"])
	if !ok || !str(tool, "id", false, &msg.Tool.ID) || !str(tool, "version", true, &msg.Tool.Version) {
		return nil, false
	}
	input, ok := top["input"]
	if !ok {
		return nil, false
	}
	msg.Input = input
	ctx, ok := object(top["ctx"])
	if !ok || !str(ctx, "tenantId", false, &msg.Ctx.TenantID) || !str(ctx, "runId", false, &msg.Ctx.RunID) ||
		!str(ctx, "requestId", true, &msg.Ctx.RequestID) ||
		!openObject(ctx, "env", &msg.Ctx.Env) || !openObject(ctx, "secrets", &msg.Ctx.Secrets) || !openObject(ctx, "config", &msg.Ctx.Config) {
		return nil, false
	}
	return msg, true
}

func fastCheckInvoke(top rawObject) (any, bool) {
	msg := &CheckInvoke{V: Version, Kind: KindCheckInvoke}
	check, ok := object(top["check"])
	if !ok || !str(check, "id", false, &msg.Check.ID) {
		return nil, false
	}
	if msg.Config, ok = requiredObject(top, "config"); !ok {
		return nil, false
	}
	if msg.Trace, ok = requiredObject(top, "trace"); !ok {
		return nil, false
	}
	return msg, true
}

func fastResult(top rawObject) (any, bool) {
	output, ok := top["output"]
	if !ok {
		return nil, false
	}
	return &ToolResult{V: Version, Kind: KindResult, Output: output}, true
}

func fastCheckResult(top rawObject) (any, bool) {
	result, ok := object(top["result"])
	if !ok {
		return nil, false
	}
	passed := string(result["passed"])
	if passed != "true" && passed != "false" {
		return nil, false
	}
	var reason, judge string
	var attrs map[string]any
	if !str(result, "reason", true, &reason) || !str(result, "judgeResponse", true, &judge) || !openObject(result, "attributes", &attrs) {
		return nil, false
	}
	msg := &CheckResult{V: Version, Kind: KindCheckResult}
	if err := json.Unmarshal(top["result"], &msg.Result); err != nil {
		return nil, false
	}
	return msg, true
}
