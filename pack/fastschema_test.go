package pack

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fastSchemas are simple schemas the fast check must handle: the demo
// pack's, and a few more that use every keyword it knows.
var fastSchemas = []string{
	`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`,
	`{"type":"object","properties":{"ms":{"type":"integer","minimum":0}},"required":["ms"],"additionalProperties":false}`,
	`{"type":"object"}`,
	`{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"],"additionalProperties":false}`,
	`{"type":"object","properties":{"tokenVisible":{"type":"boolean"},"region":{"type":"string"}},"required":["tokenVisible","region"],"additionalProperties":false}`,
	`true`,
	`{}`,
	`{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"t","type":["string","null"],"minLength":2,"maxLength":3}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"number","minimum":-5,"maximum":10,"exclusiveMinimum":-6,"exclusiveMaximum":9}`,
	`{"type":"array","items":{"type":"integer","minimum":1},"minItems":1,"maxItems":3}`,
	`{"enum":["a","b",true,null]}`,
	`{"const":"x"}`,
	`{"type":"object","minProperties":1,"maxProperties":2,"additionalProperties":{"type":"string","enum":["k","ü"]}}`,
	`{"type":"object","properties":{"user":{"type":"object","properties":{"name":{"type":"string","minLength":1},"age":{"type":"integer","minimum":0,"maximum":150}},"required":["name"],"additionalProperties":false},"tags":{"type":"array","items":{"type":"string"}}},"required":["user"]}`,
	`{"type":"integer","maximum":9007199254740992,"minimum":-9007199254740992}`,
	`{"properties":{"a":{"type":"string"}},"required":["a"]}`,
}

// slowSchemas use keywords the fast check does not handle; they must get
// no fast check at all.
var slowSchemas = []string{
	`false`,
	`{"type":"string","format":"email"}`,
	`{"type":"string","pattern":"^a"}`,
	`{"$defs":{"s":{"type":"string"}},"$ref":"#/$defs/s"}`,
	`{"allOf":[{"type":"string"}]}`,
	`{"type":"number","minimum":0.5}`,
	`{"type":"number","maximum":9007199254740993}`,
	`{"enum":[1,2]}`,
	`{"const":{"a":1}}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"array","items":[{"type":"string"}]}`,
	`{"type":"array","uniqueItems":true}`,
	`{"$schema":"http://json-schema.org/draft-04/schema#","type":"integer"}`,
	`{"type":"object","properties":{"a":{"type":"string","format":"date"}}}`,
	`{"type":"object","patternProperties":{"^x":{"type":"string"}}}`,
	`{"type":"number","multipleOf":2}`,
}

// fastValues are instances tried against every schema.
var fastValues = []string{
	` {"text" : "hello, pack service"} `, `{"text":"a\u0062"}`, `{"text":"x","text":"y"}`, `{"ms":1e2}`,
	`{"ms":123456789012345678}`, `"\""`, `-0`, `[[[]]]`, `{"ms":100,"ms":-1}`,
	`{"text":"hello"}`, `{"text":1}`, `{"text":"a","x":1}`, `{}`, `{"ms":0}`, `{"ms":-1}`, `{"ms":1.5}`,
	`{"ms":1.0}`, `{"count":3}`, `{"tokenVisible":true,"region":"eu"}`, `null`, `"ab"`, `"abcd"`, `"a"`,
	`"日本"`, `-5`, `-6`, `9`, `8.999`, `10`, `[1,2]`, `[]`, `[0]`, `[1,2,3,4]`, `"b"`, `true`, `false`,
	`"x"`, `{"k":"k"}`, `{"k":"ü","l":"k"}`, `{"k":1}`, `{"user":{"name":"n","age":3},"tags":["a"]}`,
	`{"user":{"name":""}}`, `{"user":{"name":"n","age":151}}`, `{"user":{"name":"n"},"tags":[1]}`,
	`9007199254740992`, `9007199254740993`, `1e300`, `-1e300`, `{"a":"x","b":2}`, `{"a":null}`,
}

// badJSON is not JSON: the raw fast check must refuse it.
var badJSON = []string{`{"ms":01}`, `[1,]`, `{"a":"x",}`, `{"a" "x"}`, `-`, `1.`, `1e`, `{"text":"a"`, `"a`, ``,
	`{"text":"a"} x`, "\"\x01\"", `tru`, `{"text":"\xff"}`, `[1 2]`, `{,}`, `{"a":1,}`}

func TestFastSchemaRefusesBadJSON(t *testing.T) {
	for _, src := range fastSchemas {
		s := mustCompile(t, src)
		for _, val := range badJSON {
			if s.FastAccepts([]byte(val)) {
				t.Errorf("schema %s: FastAccepts(%q), which is not JSON", src, val)
			}
		}
	}
}

// TestFastAcceptsDemoValues checks the raw fast check really answers the
// demo pack's usual values.
func TestFastAcceptsDemoValues(t *testing.T) {
	for _, c := range []struct{ schema, value string }{
		{fastSchemas[0], `{"text":"hello, pack service"}`},
		{fastSchemas[1], `{"ms": 250}`},
		{fastSchemas[2], `{"a":[1,{"b":null}],"c":-1.5e3}`},
		{fastSchemas[4], `{"tokenVisible":false,"region":"eu-west"}`},
		{fastSchemas[13], `{"user":{"name":"n","age":3},"tags":["a","b"]}`},
	} {
		s := mustCompile(t, c.schema)
		if !s.FastAccepts([]byte(c.value)) {
			t.Errorf("schema %s: FastAccepts(%s) = false, want true", c.schema, c.value)
		}
	}
}

// mustCompile compiles the schema src, failing the test if it does not.
func mustCompile(t *testing.T, src string) *Schema {
	t.Helper()
	s, err := CompileSchema(json.RawMessage(src))
	if err != nil {
		t.Fatalf("CompileSchema(%s): %v", src, err)
	}
	return s
}

// fullValidate is the full validator alone, without the fast check.
func fullValidate(s *Schema, v any) []Issue { return validate(s.sch, s.doc, schemaURL, v) }

func TestFastSchemaCompiles(t *testing.T) {
	for _, src := range fastSchemas {
		s := mustCompile(t, src)
		if s.fast == nil {
			t.Errorf("%s: no fast check", src)
		}
	}
	for _, src := range slowSchemas {
		s := mustCompile(t, src)
		if s.fast != nil {
			t.Errorf("%s: has a fast check, but uses a keyword it does not handle", src)
		}
	}
}

// TestFastSchemaAgrees checks both ways on the table: the fast check
// accepts exactly what the full validator accepts (so it is really used),
// and Validate's issues are the full validator's.
func TestFastSchemaAgrees(t *testing.T) {
	for _, src := range fastSchemas {
		s := mustCompile(t, src)
		for _, val := range fastValues {
			var v any
			if err := json.Unmarshal([]byte(val), &v); err != nil {
				t.Fatal(err)
			}
			full := fullValidate(s, v)
			if fast := s.fast.valid(v); fast != (full == nil) {
				t.Errorf("schema %s, value %s: fast valid = %v, full issues %v", src, val, fast, full)
			}
			exact, issue := instance(json.RawMessage(val))
			if issue != nil {
				t.Fatal(issue.Message)
			}
			fullExact := fullValidate(s, exact)
			if s.FastAccepts([]byte(val)) && (full != nil || fullExact != nil) {
				t.Errorf("schema %s, raw value %s: FastAccepts, but the full validator rejects it: %v %v", src, val, full, fullExact)
			}
			if diff := cmp.Diff(fullExact, s.Validate(json.RawMessage(val))); diff != "" {
				t.Errorf("schema %s, raw value %s: Validate differs from the full validator (-full +Validate):\n%s", src, val, diff)
			}
			if diff := cmp.Diff(full, s.Validate(v)); diff != "" {
				t.Errorf("schema %s, value %s: Validate differs from the full validator (-full +Validate):\n%s", src, val, diff)
			}
		}
	}
}

// TestFastSchemaLeavesOtherValues checks that values the fast check does
// not know (raw JSON, json.Number, Go integers) go to the full validator.
func TestFastSchemaLeavesOtherValues(t *testing.T) {
	s := mustCompile(t, `{"type":"integer","minimum":0}`)
	for _, v := range []any{json.RawMessage(`1`), []byte(`1`), json.Number("1"), 1, int64(1)} {
		if s.fast.valid(v) {
			t.Errorf("fast check answered for %T", v)
		}
		if issues := s.Validate(v); issues != nil {
			t.Errorf("Validate(%T) = %v, want valid", v, issues)
		}
	}
}

// FuzzFastSchema checks that the fast check never accepts a value the
// full validator rejects, over the table's schemas and fuzzed ones.
func FuzzFastSchema(f *testing.F) {
	for _, sch := range append(append([]string{}, fastSchemas...), slowSchemas...) {
		for _, val := range append(append([]string{}, fastValues...), badJSON...) {
			f.Add(sch, val)
		}
	}
	f.Fuzz(func(t *testing.T, schemaSrc, valueSrc string) {
		s, err := CompileSchema(json.RawMessage(schemaSrc))
		if err != nil || s.fast == nil {
			return
		}
		var v any
		if json.Unmarshal([]byte(valueSrc), &v) != nil {
			if s.fast.validJSON([]byte(valueSrc)) && !json.Valid([]byte(valueSrc)) {
				t.Fatalf("schema %s: the raw fast check accepted %q, which is not JSON", schemaSrc, valueSrc)
			}
			if s.fast.validJSON([]byte(valueSrc)) {
				// JSON that does not decode to float64 (a number out
				// of range): the full validator decides from the exact decode.
				exact, issue := instance(json.RawMessage(valueSrc))
				if issue != nil || fullValidate(s, exact) != nil {
					t.Fatalf("schema %s: the raw fast check accepted %q, which the full validator rejects", schemaSrc, valueSrc)
				}
			}
			return
		}
		if s.fast.valid(v) {
			if issues := fullValidate(s, v); issues != nil {
				t.Fatalf("schema %s: the fast check accepted %s, which the full validator rejects: %v", schemaSrc, valueSrc, issues)
			}
		}
		if s.fast.validJSON([]byte(valueSrc)) {
			if issues := fullValidate(s, v); issues != nil {
				t.Fatalf("schema %s: the raw fast check accepted %s, which the full validator rejects (float64 decode): %v", schemaSrc, valueSrc, issues)
			}
			exact, issue := instance(json.RawMessage(valueSrc))
			if issue != nil {
				t.Fatalf("the raw fast check accepted %q, which does not decode: %v", valueSrc, issue.Message)
			}
			if issues := fullValidate(s, exact); issues != nil {
				t.Fatalf("schema %s: the raw fast check accepted %s, which the full validator rejects (exact decode): %v", schemaSrc, valueSrc, issues)
			}
		}
	})
}
