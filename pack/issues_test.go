package pack

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSchemaValidateAjvIssues(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		value  string
		want   []Issue
	}{
		{
			name:   "valid value has no issues",
			schema: `{"type":"object","properties":{"name":{"type":"string"}}}`,
			value:  `{"name":"a"}`,
			want:   nil,
		},
		{
			name:   "required names the missing property at the object",
			schema: `{"type":"object","required":["name","age"]}`,
			value:  `{"age":1}`,
			want: []Issue{{InstancePath: "", SchemaPath: "#/required", Keyword: "required",
				Params: map[string]any{"missingProperty": "name"}, Message: "must have required property 'name'"}},
		},
		{
			name:   "required reports every missing property",
			schema: `{"type":"object","required":["a","b"]}`,
			value:  `{}`,
			want: []Issue{
				{InstancePath: "", SchemaPath: "#/required", Keyword: "required", Params: map[string]any{"missingProperty": "a"}, Message: "must have required property 'a'"},
				{InstancePath: "", SchemaPath: "#/required", Keyword: "required", Params: map[string]any{"missingProperty": "b"}, Message: "must have required property 'b'"},
			},
		},
		{
			name:   "additionalProperties false names each extra property",
			schema: `{"type":"object","properties":{"a":{}},"additionalProperties":false}`,
			value:  `{"a":1,"z":2,"y":3}`,
			want: []Issue{
				{InstancePath: "", SchemaPath: "#/additionalProperties", Keyword: "additionalProperties", Params: map[string]any{"additionalProperty": "y"}, Message: "must NOT have additional properties"},
				{InstancePath: "", SchemaPath: "#/additionalProperties", Keyword: "additionalProperties", Params: map[string]any{"additionalProperty": "z"}, Message: "must NOT have additional properties"},
			},
		},
		{
			name:   "type at a nested property",
			schema: `{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"}}}}}}`,
			value:  `{"items":[{"name":"ok"},{"name":3}]}`,
			want: []Issue{{InstancePath: "/items/1/name", SchemaPath: "#/properties/items/items/properties/name/type", Keyword: "type",
				Params: map[string]any{"type": "string"}, Message: "must be string"}},
		},
		{
			name:   "type list keeps the schema's order",
			schema: `{"type":["string","null"]}`,
			value:  `1`,
			want: []Issue{{InstancePath: "", SchemaPath: "#/type", Keyword: "type",
				Params: map[string]any{"type": []any{"string", "null"}}, Message: "must be string,null"}},
		},
		{
			name:   "integer type",
			schema: `{"type":"integer"}`,
			value:  `1.5`,
			want:   []Issue{{InstancePath: "", SchemaPath: "#/type", Keyword: "type", Params: map[string]any{"type": "integer"}, Message: "must be integer"}},
		},
		{
			name:   "enum lists the allowed values",
			schema: `{"enum":["a",1,null]}`,
			value:  `"b"`,
			want: []Issue{{InstancePath: "", SchemaPath: "#/enum", Keyword: "enum",
				Params: map[string]any{"allowedValues": []any{"a", float64(1), nil}}, Message: "must be equal to one of the allowed values"}},
		},
		{
			name:   "const",
			schema: `{"const":2}`,
			value:  `3`,
			want:   []Issue{{InstancePath: "", SchemaPath: "#/const", Keyword: "const", Params: map[string]any{"allowedValue": float64(2)}, Message: "must be equal to constant"}},
		},
		{
			name:   "minimum",
			schema: `{"properties":{"ms":{"type":"integer","minimum":0}}}`,
			value:  `{"ms":-1}`,
			want:   []Issue{{InstancePath: "/ms", SchemaPath: "#/properties/ms/minimum", Keyword: "minimum", Params: map[string]any{"limit": float64(0)}, Message: "must be >= 0"}},
		},
		{
			name:   "maximum with a fraction",
			schema: `{"maximum":2.5}`,
			value:  `3`,
			want:   []Issue{{InstancePath: "", SchemaPath: "#/maximum", Keyword: "maximum", Params: map[string]any{"limit": 2.5}, Message: "must be <= 2.5"}},
		},
		{
			name:   "exclusiveMinimum",
			schema: `{"exclusiveMinimum":0}`,
			value:  `0`,
			want:   []Issue{{InstancePath: "", SchemaPath: "#/exclusiveMinimum", Keyword: "exclusiveMinimum", Params: map[string]any{"limit": float64(0)}, Message: "must be > 0"}},
		},
		{
			name:   "exclusiveMaximum",
			schema: `{"exclusiveMaximum":10}`,
			value:  `10`,
			want:   []Issue{{InstancePath: "", SchemaPath: "#/exclusiveMaximum", Keyword: "exclusiveMaximum", Params: map[string]any{"limit": float64(10)}, Message: "must be < 10"}},
		},
		{
			name:   "multipleOf",
			schema: `{"multipleOf":3}`,
			value:  `4`,
			want:   []Issue{{InstancePath: "", SchemaPath: "#/multipleOf", Keyword: "multipleOf", Params: map[string]any{"multipleOf": float64(3)}, Message: "must be multiple of 3"}},
		},
		{
			name:   "minLength",
			schema: `{"minLength":3}`,
			value:  `"ab"`,
			want:   []Issue{{InstancePath: "", SchemaPath: "#/minLength", Keyword: "minLength", Params: map[string]any{"limit": float64(3)}, Message: "must NOT have fewer than 3 characters"}},
		},
		{
			name:   "maxLength",
			schema: `{"maxLength":1}`,
			value:  `"ab"`,
			want:   []Issue{{InstancePath: "", SchemaPath: "#/maxLength", Keyword: "maxLength", Params: map[string]any{"limit": float64(1)}, Message: "must NOT have more than 1 characters"}},
		},
		{
			name:   "minItems",
			schema: `{"minItems":2}`,
			value:  `[1]`,
			want:   []Issue{{InstancePath: "", SchemaPath: "#/minItems", Keyword: "minItems", Params: map[string]any{"limit": float64(2)}, Message: "must NOT have fewer than 2 items"}},
		},
		{
			name:   "maxItems",
			schema: `{"maxItems":0}`,
			value:  `[1]`,
			want:   []Issue{{InstancePath: "", SchemaPath: "#/maxItems", Keyword: "maxItems", Params: map[string]any{"limit": float64(0)}, Message: "must NOT have more than 0 items"}},
		},
		{
			name:   "minProperties",
			schema: `{"minProperties":1}`,
			value:  `{}`,
			want:   []Issue{{InstancePath: "", SchemaPath: "#/minProperties", Keyword: "minProperties", Params: map[string]any{"limit": float64(1)}, Message: "must NOT have fewer than 1 properties"}},
		},
		{
			name:   "maxProperties",
			schema: `{"maxProperties":1}`,
			value:  `{"a":1,"b":2}`,
			want:   []Issue{{InstancePath: "", SchemaPath: "#/maxProperties", Keyword: "maxProperties", Params: map[string]any{"limit": float64(1)}, Message: "must NOT have more than 1 properties"}},
		},
		{
			name:   "pattern",
			schema: `{"pattern":"^[a-z]+$"}`,
			value:  `"A1"`,
			want:   []Issue{{InstancePath: "", SchemaPath: "#/pattern", Keyword: "pattern", Params: map[string]any{"pattern": "^[a-z]+$"}, Message: `must match pattern "^[a-z]+$"`}},
		},
		{
			name:   "format email is asserted",
			schema: `{"properties":{"to":{"type":"string","format":"email"}}}`,
			value:  `{"to":"not-an-address"}`,
			want:   []Issue{{InstancePath: "/to", SchemaPath: "#/properties/to/format", Keyword: "format", Params: map[string]any{"format": "email"}, Message: `must match format "email"`}},
		},
		{
			name:   "uniqueItems",
			schema: `{"uniqueItems":true}`,
			value:  `[1,2,1]`,
			want: []Issue{{InstancePath: "", SchemaPath: "#/uniqueItems", Keyword: "uniqueItems",
				Params: map[string]any{"i": float64(0), "j": float64(2)}, Message: "must NOT have duplicate items (items ## 2 and 0 are identical)"}},
		},
		{
			name:   "items false after prefixItems reports once",
			schema: `{"prefixItems":[{}],"items":false}`,
			value:  `[1,2,3]`,
			want:   []Issue{{InstancePath: "", SchemaPath: "#/items", Keyword: "items", Params: map[string]any{"limit": float64(1)}, Message: "must NOT have more than 1 items"}},
		},
		{
			name:   "contains",
			schema: `{"contains":{"type":"string"}}`,
			value:  `[1,2]`,
			want:   []Issue{{InstancePath: "", SchemaPath: "#/contains", Keyword: "contains", Params: map[string]any{"minContains": float64(1)}, Message: "must contain at least 1 valid item(s)"}},
		},
		{
			name:   "not",
			schema: `{"not":{"type":"string"}}`,
			value:  `"a"`,
			want:   []Issue{{InstancePath: "", SchemaPath: "#/not", Keyword: "not", Params: map[string]any{}, Message: "must NOT be valid"}},
		},
		{
			name:   "anyOf reports the branches then anyOf",
			schema: `{"anyOf":[{"type":"string"},{"type":"number"}]}`,
			value:  `true`,
			want: []Issue{
				{InstancePath: "", SchemaPath: "#/anyOf/0/type", Keyword: "type", Params: map[string]any{"type": "string"}, Message: "must be string"},
				{InstancePath: "", SchemaPath: "#/anyOf/1/type", Keyword: "type", Params: map[string]any{"type": "number"}, Message: "must be number"},
				{InstancePath: "", SchemaPath: "#/anyOf", Keyword: "anyOf", Params: map[string]any{}, Message: "must match a schema in anyOf"},
			},
		},
		{
			name:   "oneOf matching twice names the passing schemas",
			schema: `{"oneOf":[{"type":"number"},{"minimum":0}]}`,
			value:  `1`,
			want: []Issue{{InstancePath: "", SchemaPath: "#/oneOf", Keyword: "oneOf",
				Params: map[string]any{"passingSchemas": []any{float64(0), float64(1)}}, Message: "must match exactly one schema in oneOf"}},
		},
		{
			name:   "dependentRequired",
			schema: `{"dependentRequired":{"card":["cvc"]}}`,
			value:  `{"card":"x"}`,
			want: []Issue{{InstancePath: "", SchemaPath: "#/dependentRequired", Keyword: "dependentRequired",
				Params:  map[string]any{"property": "card", "missingProperty": "cvc", "depsCount": float64(1), "deps": "cvc"},
				Message: "must have property cvc when property card is present"}},
		},
		{
			name:   "propertyNames",
			schema: `{"propertyNames":{"maxLength":2}}`,
			value:  `{"abc":1}`,
			want: []Issue{{InstancePath: "", SchemaPath: "#/propertyNames", Keyword: "propertyNames",
				Params: map[string]any{"propertyName": "abc"}, Message: "property name must be valid"}},
		},
		{
			name:   "false schema",
			schema: `{"properties":{"x":false}}`,
			value:  `{"x":1}`,
			want:   []Issue{{InstancePath: "/x", SchemaPath: "#/properties/x", Keyword: "false schema", Params: map[string]any{}, Message: "boolean schema is false"}},
		},
		{
			name:   "unevaluatedProperties",
			schema: `{"properties":{"a":{}},"unevaluatedProperties":false}`,
			value:  `{"a":1,"b":2}`,
			want: []Issue{{InstancePath: "", SchemaPath: "#/unevaluatedProperties", Keyword: "unevaluatedProperties",
				Params: map[string]any{"unevaluatedProperty": "b"}, Message: "must NOT have unevaluated properties"}},
		},
		{
			name:   "if/then reports the then failures then the if",
			schema: `{"if":{"properties":{"kind":{"const":"a"}}},"then":{"required":["x","y"]},"else":{"type":"object"}}`,
			value:  `{"kind":"a"}`,
			want: []Issue{
				{InstancePath: "", SchemaPath: "#/then/required", Keyword: "required", Params: map[string]any{"missingProperty": "x"}, Message: "must have required property 'x'"},
				{InstancePath: "", SchemaPath: "#/then/required", Keyword: "required", Params: map[string]any{"missingProperty": "y"}, Message: "must have required property 'y'"},
				{InstancePath: "", SchemaPath: "#/if", Keyword: "if", Params: map[string]any{"failingKeyword": "then"}, Message: `must match "then" schema`},
			},
		},
		{
			name:   "if/else",
			schema: `{"if":{"type":"string"},"then":{},"else":{"type":"integer"}}`,
			value:  `1.5`,
			want: []Issue{
				{InstancePath: "", SchemaPath: "#/else/type", Keyword: "type", Params: map[string]any{"type": "integer"}, Message: "must be integer"},
				{InstancePath: "", SchemaPath: "#/if", Keyword: "if", Params: map[string]any{"failingKeyword": "else"}, Message: `must match "else" schema`},
			},
		},
		{
			name:   "a property named then is not an if",
			schema: `{"properties":{"then":{"type":"string"}}}`,
			value:  `{"then":1}`,
			want:   []Issue{{InstancePath: "/then", SchemaPath: "#/properties/then/type", Keyword: "type", Params: map[string]any{"type": "string"}, Message: "must be string"}},
		},
		{
			name:   "ref reports the target's schema path",
			schema: `{"$defs":{"name":{"type":"string"}},"properties":{"n":{"$ref":"#/$defs/name"}}}`,
			value:  `{"n":1}`,
			want:   []Issue{{InstancePath: "/n", SchemaPath: "#/$defs/name/type", Keyword: "type", Params: map[string]any{"type": "string"}, Message: "must be string"}},
		},
		{
			name:   "pointer tokens are escaped",
			schema: `{"properties":{"a/b~c":{"type":"string"}}}`,
			value:  `{"a/b~c":1}`,
			want:   []Issue{{InstancePath: "/a~1b~0c", SchemaPath: "#/properties/a~1b~0c/type", Keyword: "type", Params: map[string]any{"type": "string"}, Message: "must be string"}},
		},
		{
			name:   "errors come in instance order",
			schema: `{"type":"object","required":["text"],"properties":{"a":{"type":"string"},"b":{"type":"string"}},"additionalProperties":false}`,
			value:  `{"b":1,"a":2,"c":3}`,
			want: []Issue{
				{InstancePath: "", SchemaPath: "#/additionalProperties", Keyword: "additionalProperties", Params: map[string]any{"additionalProperty": "c"}, Message: "must NOT have additional properties"},
				{InstancePath: "", SchemaPath: "#/required", Keyword: "required", Params: map[string]any{"missingProperty": "text"}, Message: "must have required property 'text'"},
				{InstancePath: "/a", SchemaPath: "#/properties/a/type", Keyword: "type", Params: map[string]any{"type": "string"}, Message: "must be string"},
				{InstancePath: "/b", SchemaPath: "#/properties/b/type", Keyword: "type", Params: map[string]any{"type": "string"}, Message: "must be string"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, tt.schema)
			got := s.Validate(json.RawMessage(tt.value))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("issues (-want +got):\n%s", diff)
			}
			// The same value decoded by encoding/json gives the same issues.
			var v any
			if err := json.Unmarshal([]byte(tt.value), &v); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, s.Validate(v)); diff != "" {
				t.Errorf("issues of the decoded value (-want +got):\n%s", diff)
			}
			// Issues round-trip through JSON unchanged.
			if got != nil {
				b, err := json.Marshal(got)
				if err != nil {
					t.Fatal(err)
				}
				var back []Issue
				if err := json.Unmarshal(b, &back); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(got, back); diff != "" {
					t.Errorf("issues after a JSON round trip (-before +after):\n%s", diff)
				}
			}
		})
	}
}

func TestSchemaValidateBadJSON(t *testing.T) {
	s := mustCompile(t, `{}`)
	got := s.Validate(json.RawMessage(`{"a":`))
	if len(got) != 1 || got[0].InstancePath != "" || got[0].Keyword != "" || got[0].Message == "" {
		t.Errorf("Validate(bad JSON) = %+v, want one root issue without keyword", got)
	}
}

func TestCompileSchemaRejects(t *testing.T) {
	tests := []struct {
		name   string
		schema string
	}{
		{"not JSON", `{"type":`},
		{"invalid keyword value", `{"type":"strin"}`},
		{"external reference", `{"$ref":"https://example.com/other.json"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := CompileSchema(json.RawMessage(tt.schema)); err == nil {
				t.Errorf("CompileSchema(%s) succeeded, want an error", tt.schema)
			}
		})
	}
}

func TestJSNumber(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"}, {1, "1"}, {-2.5, "-2.5"}, {100000000, "100000000"}, {1e21, "1e+21"}, {1e-7, "1e-7"}, {0.000001, "0.000001"},
	}
	for _, tt := range tests {
		if got := jsNumber(tt.in); got != tt.want {
			t.Errorf("jsNumber(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
