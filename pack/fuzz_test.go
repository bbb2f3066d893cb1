package pack

import (
	"encoding/json"
	"strings"
	"testing"
)

func FuzzDecodeRequest(f *testing.F) {
	for _, msg := range sampleMessages() {
		b, _ := json.Marshal(msg)
		f.Add(b)
	}
	for _, s := range []string{``, `{`, `null`, `[]`, `{"v":2}`, `{"v":2,"kind":"invoke"}`, `{"v":2.0,"kind":"invoke","tool":{"id":"x"},"input":1,"ctx":{"tenantId":"t","runId":"r"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, ok := fastRequest(body); ok {
			if issues := ValidateRequest(body); issues != nil {
				t.Fatalf("the fast path accepted %q, which the schema rejects: %v", body, issues)
			}
		}
		msg, em := DecodeRequest(body)
		if (msg == nil) == (em == nil) {
			t.Fatalf("DecodeRequest(%q) = %v, %v: want exactly one", body, msg, em)
		}
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
		b, err := json.Marshal(msg)
		if err != nil {
			t.Fatal(err)
		}
		if issues := ValidateRequest(b); issues != nil {
			t.Fatalf("a decoded request re-encodes to an invalid one %s: %v", b, issues)
		}
	})
}

func FuzzDecodeResponse(f *testing.F) {
	for _, msg := range sampleMessages() {
		b, _ := json.Marshal(msg)
		f.Add(b)
	}
	for _, s := range []string{`{"v":2,"kind":"check-result","result":{"passed":true,"Passed":1}}`, `{"v":2,"kind":"result"}`, `{"v":2,"kind":"check-result","result":{"passed":null}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, ok := fastResponse(body); ok {
			if issues := ValidateResponse(body); issues != nil {
				t.Fatalf("the fast path accepted %q, which the schema rejects: %v", body, issues)
			}
		}
		msg, em := DecodeResponse(body)
		if (msg == nil) == (em == nil) {
			t.Fatalf("DecodeResponse(%q) = %v, %v: want exactly one", body, msg, em)
		}
		if msg != nil {
			b, err := json.Marshal(msg)
			if err != nil {
				t.Fatal(err)
			}
			if issues := ValidateResponse(b); issues != nil {
				t.Fatalf("a decoded response re-encodes to an invalid one %s: %v", b, issues)
			}
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
