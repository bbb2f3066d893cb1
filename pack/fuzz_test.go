package pack

import (
	"encoding/json"
	"strings"
	"testing"
)

// seed adds the sample messages and the bodies extra to f's corpus.
func seed(f *testing.F, extra ...string) {
	for _, msg := range sampleMessages() {
		b, _ := json.Marshal(msg)
		f.Add(b)
	}
	for _, s := range extra {
		f.Add([]byte(s))
	}
}

// fastAgrees fails when d's fast path accepts a body d's schema rejects.
func fastAgrees(t *testing.T, d direction, body []byte) {
	t.Helper()
	if _, ok := d.fast(body); ok {
		if issues := d.validate(body); issues != nil {
			t.Fatalf("the fast path accepted %q, which the schema rejects: %v", body, issues)
		}
	}
}

// decodesOne checks that d's fast path agrees with its schema on body,
// then decodes body with decode (DecodeRequest or DecodeResponse, as d)
// and fails unless it gives exactly one of a message and an error
// message.
func decodesOne(t *testing.T, d direction, decode func([]byte) (any, *ErrorMessage), body []byte) (any, *ErrorMessage) {
	t.Helper()
	fastAgrees(t, d, body)
	msg, em := decode(body)
	if (msg == nil) == (em == nil) {
		t.Fatalf("Decode%s%s(%q) = %v, %v: want exactly one", strings.ToUpper(d.name[:1]), d.name[1:], body, msg, em)
	}
	return msg, em
}

// reencodes fails when msg, decoded by d, does not encode to a body d's
// schema accepts.
func reencodes(t *testing.T, d direction, msg any) {
	t.Helper()
	b, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if issues := d.validate(b); issues != nil {
		t.Fatalf("a decoded %s re-encodes to an invalid one %s: %v", d.name, b, issues)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	seed(f, ``, `{`, `null`, `[]`, `{"v":2}`, `{"v":2,"kind":"invoke"}`, `{"v":2.0,"kind":"invoke","tool":{"id":"x"},"input":1,"ctx":{"tenantId":"t","runId":"r"}}`)
	f.Fuzz(func(t *testing.T, body []byte) {
		msg, em := decodesOne(t, requests, DecodeRequest, body)
		if em != nil {
			if em.Code != CodeInvalidRequest || len(em.Issues) == 0 {
				t.Fatalf("error message = %+v", em)
			}
			b, err := json.Marshal(em)
			if err != nil {
				t.Fatal(err)
			}
			if issues := ValidateResponse(b); issues != nil {
				t.Fatalf("the answer %s is not a valid response: %v", b, issues)
			}
			return
		}
		reencodes(t, requests, msg)
	})
}

func FuzzDecodeResponse(f *testing.F) {
	seed(f, `{"v":2,"kind":"check-result","result":{"passed":true,"Passed":1}}`, `{"v":2,"kind":"result"}`, `{"v":2,"kind":"check-result","result":{"passed":null}}`)
	f.Fuzz(func(t *testing.T, body []byte) {
		msg, _ := decodesOne(t, responses, DecodeResponse, body)
		if msg != nil {
			reencodes(t, responses, msg)
		}
	})
}

func FuzzSchemaValidate(f *testing.F) {
	f.Add(`{"type":"object","required":["a"],"properties":{"a":{"type":"string","minLength":2}},"additionalProperties":false}`, `{"a":"x","b":1}`)
	f.Add(`{"anyOf":[{"type":"string"},{"enum":[1,2]}]}`, `3`)
	f.Add(`{"if":{"type":"string"},"then":{"pattern":"^a"},"else":{"minimum":0}}`, `-1`)
	f.Add(`{"prefixItems":[{}],"items":false,"uniqueItems":true,"contains":{"const":1}}`, `[2,2,3]`)
	f.Add(`{"properties":{"a/b":{"format":"email"}},"dependentRequired":{"x":["y"]}}`, `{"a/b":"no","x":1}`)
	f.Fuzz(func(t *testing.T, schema, value string) {
		s, err := CompileSchema(json.RawMessage(schema))
		if err != nil {
			return
		}
		issues := s.Validate(json.RawMessage(value))
		for _, is := range issues {
			if is.Message == "" {
				t.Fatalf("issue without a message: %+v", is)
			}
			if is.Keyword != "" && !strings.HasPrefix(is.SchemaPath, "#") {
				t.Fatalf("schemaPath %q is not a fragment", is.SchemaPath)
			}
			if is.InstancePath != "" && !strings.HasPrefix(is.InstancePath, "/") {
				t.Fatalf("instancePath %q is not a JSON Pointer", is.InstancePath)
			}
		}
		// Issues are valid protocol issues.
		em := NewError(CodeInputValidationFailed, "bad input")
		em.Issues = issues
		b, err := json.Marshal(em)
		if err != nil {
			t.Fatalf("issues do not marshal: %v", err)
		}
		if len(issues) > 0 {
			if bad := ValidateResponse(b); bad != nil {
				t.Fatalf("issues are not valid protocol issues %s: %v", b, bad)
			}
		}
	})
}
