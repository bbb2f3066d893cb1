package pack

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// A fastSchema is a validity-only check for the common simple schemas
// (type, properties, required, additionalProperties, items, enum and
// const of scalars, and the integer limits on strings, numbers, arrays and
// objects), compiled once from the schema document next to the full
// validator. It answers only "certainly valid"; any other answer, and any
// value it does not know (json.Number, raw JSON, Go integers), sends the
// value to the full validator, which decides and builds the Ajv-shaped
// issues. A schema with a keyword it does not know (format, pattern, $ref,
// allOf, …) gets no fastSchema at all. FuzzFastSchema checks that it never
// accepts a value the full validator rejects.
//
// Profiling demo.echo showed the full validator's walk to be about a
// fifth of the service's own cost per call, for schemas such as
// {"type":"object","properties":{"text":{"type":"string"}},...}.
type fastSchema struct {
	types      typeSet                // 0: any type
	props      map[string]*fastSchema // properties
	required   []string
	extra      *fastSchema // additionalProperties as a schema; nil: any
	noExtra    bool        // additionalProperties: false
	items      *fastSchema // items (the one-schema form); nil: any
	enum       []any       // strings, booleans and nulls; nil: no enum
	hasEnum    bool
	minLen     int // -1 when absent, like the other limits below
	maxLen     int
	minItems   int
	maxItems   int
	minProps   int
	maxProps   int
	min, max   float64 // number limits, exact integers of float64
	exMin      float64
	exMax      float64
	limitFlags uint8
}

// typeSet is a set of JSON Schema type names, one bit each.
type typeSet uint8

const (
	typeNull typeSet = 1 << iota
	typeBoolean
	typeNumber
	typeInteger
	typeString
	typeArray
	typeObject
)

var typeNames = map[string]typeSet{
	"null": typeNull, "boolean": typeBoolean, "number": typeNumber, "integer": typeInteger,
	"string": typeString, "array": typeArray, "object": typeObject,
}

const (
	hasMin uint8 = 1 << iota
	hasMax
	hasExMin
	hasExMax
)

// fastDrafts are the $schema values whose meaning of the handled keywords
// is the one fastSchema implements (draft-04 differs on integer and
// exclusiveMinimum).
var fastDrafts = map[string]bool{
	"https://json-schema.org/draft/2020-12/schema":  true,
	"https://json-schema.org/draft/2020-12/schema#": true,
	"https://json-schema.org/draft/2019-09/schema":  true,
	"https://json-schema.org/draft/2019-09/schema#": true,
	"http://json-schema.org/draft-07/schema":        true,
	"http://json-schema.org/draft-07/schema#":       true,
	"http://json-schema.org/draft-06/schema":        true,
	"http://json-schema.org/draft-06/schema#":       true,
}

// annotations are keywords that never affect validity here: fastSchema
// ignores them. $defs and definitions matter only through $ref, which it
// does not handle.
var annotations = map[string]bool{
	"$id": true, "$comment": true, "$anchor": true, "title": true, "description": true,
	"default": true, "examples": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"$defs": true, "definitions": true,
}

// compileFast compiles the decoded schema document (json.Number numbers,
// as jsonschema.UnmarshalJSON gives) into a fastSchema; ok is false when
// the schema uses anything fastSchema does not handle. The document must
// already have compiled with the full validator.
func compileFast(doc any) (*fastSchema, bool) {
	if m, isObj := doc.(map[string]any); isObj {
		if d, has := m["$schema"]; has {
			s, _ := d.(string)
			if !fastDrafts[s] {
				return nil, false
			}
		}
	}
	return compileFastSub(doc, true)
}

func compileFastSub(doc any, root bool) (*fastSchema, bool) {
	f := &fastSchema{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1, minProps: -1, maxProps: -1}
	switch d := doc.(type) {
	case bool:
		if !d {
			return nil, false // false is left to the full validator
		}
		return f, true // true accepts anything
	case map[string]any:
		for k, v := range d {
			if !f.keyword(k, v, root) {
				return nil, false
			}
		}
		return f, true
	}
	return nil, false
}

// keyword compiles one keyword of a schema object into f.
func (f *fastSchema) keyword(k string, v any, root bool) bool {
	switch k {
	case "$schema":
		return root // checked by compileFast
	case "type":
		return f.compileType(v)
	case "properties":
		props, ok := v.(map[string]any)
		if !ok {
			return false
		}
		f.props = make(map[string]*fastSchema, len(props))
		for name, sub := range props {
			if f.props[name], ok = compileFastSub(sub, false); !ok {
				return false
			}
		}
		return true
	case "required":
		list, ok := v.([]any)
		if !ok {
			return false
		}
		for _, x := range list {
			name, ok := x.(string)
			if !ok {
				return false
			}
			f.required = append(f.required, name)
		}
		return true
	case "additionalProperties":
		if b, ok := v.(bool); ok {
			f.noExtra = !b
			return true
		}
		var ok bool
		f.extra, ok = compileFastSub(v, false)
		return ok
	case "items":
		if _, ok := v.([]any); ok {
			return false // the tuple form of older drafts
		}
		var ok bool
		f.items, ok = compileFastSub(v, false)
		return ok
	case "enum":
		list, ok := v.([]any)
		if !ok {
			return false
		}
		f.enum, f.hasEnum = make([]any, 0, len(list)), true
		for _, x := range list {
			if !scalar(x) {
				return false
			}
			f.enum = append(f.enum, x)
		}
		return true
	case "const":
		if !scalar(v) {
			return false
		}
		f.enum, f.hasEnum = []any{v}, true
		return true
	case "minLength":
		return count(v, &f.minLen)
	case "maxLength":
		return count(v, &f.maxLen)
	case "minItems":
		return count(v, &f.minItems)
	case "maxItems":
		return count(v, &f.maxItems)
	case "minProperties":
		return count(v, &f.minProps)
	case "maxProperties":
		return count(v, &f.maxProps)
	case "minimum":
		return f.limit(v, &f.min, hasMin)
	case "maximum":
		return f.limit(v, &f.max, hasMax)
	case "exclusiveMinimum":
		return f.limit(v, &f.exMin, hasExMin)
	case "exclusiveMaximum":
		return f.limit(v, &f.exMax, hasExMax)
	}
	return annotations[k]
}

func (f *fastSchema) compileType(v any) bool {
	switch t := v.(type) {
	case string:
		f.types = typeNames[t]
		return f.types != 0
	case []any:
		for _, x := range t {
			name, _ := x.(string)
			bit := typeNames[name]
			if bit == 0 {
				return false
			}
			f.types |= bit
		}
		return f.types != 0
	}
	return false
}

// scalar reports whether an enum or const value is one fastSchema compares
// (a string, a boolean or null; numbers compare as rationals in the full
// validator and are left to it).
func scalar(v any) bool {
	switch v.(type) {
	case string, bool, nil:
		return true
	}
	return false
}

// count reads a non-negative integer keyword value.
func count(v any, dst *int) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	i, err := strconv.Atoi(string(n))
	if err != nil || i < 0 {
		return false
	}
	*dst = i
	return true
}

// maxExact is the largest integer every smaller one of which float64
// holds exactly.
const maxExact = 1 << 53

// limit reads a number limit. Only integers within ±2^53 are handled: for
// those, comparing the float64 instance with the float64 limit gives the
// full validator's answer (it compares the instance's shortest decimal
// form with the limit as rationals).
func (f *fastSchema) limit(v any, dst *float64, flag uint8) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || i > maxExact || i < -maxExact {
		return false
	}
	*dst = float64(i)
	f.limitFlags |= flag
	return true
}

// valid reports whether v is certainly valid; false means "ask the full
// validator". v is a value json.Unmarshal into an any gives.
func (f *fastSchema) valid(v any) bool {
	var t typeSet
	switch x := v.(type) {
	case nil:
		t = typeNull
	case bool:
		t = typeBoolean
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
		t = typeNumber
		if x == math.Trunc(x) {
			t |= typeInteger
		}
	case string:
		t = typeString
	case []any:
		t = typeArray
	case map[string]any:
		t = typeObject
	default:
		return false
	}
	if f.types != 0 && f.types&t == 0 {
		return false
	}
	if f.hasEnum && !f.inEnum(v) {
		return false
	}
	switch x := v.(type) {
	case float64:
		return f.validNumber(x)
	case string:
		if f.minLen >= 0 || f.maxLen >= 0 {
			n := utf8.RuneCountInString(x)
			return (f.minLen < 0 || n >= f.minLen) && (f.maxLen < 0 || n <= f.maxLen)
		}
	case []any:
		return f.validArray(x)
	case map[string]any:
		return f.validObject(x)
	}
	return true
}

func (f *fastSchema) inEnum(v any) bool {
	for _, e := range f.enum {
		switch e := e.(type) {
		case string:
			if s, ok := v.(string); ok && s == e {
				return true
			}
		case bool:
			if b, ok := v.(bool); ok && b == e {
				return true
			}
		case nil:
			if v == nil {
				return true
			}
		}
	}
	return false
}

func (f *fastSchema) validNumber(x float64) bool {
	l := f.limitFlags
	return (l&hasMin == 0 || x >= f.min) && (l&hasMax == 0 || x <= f.max) &&
		(l&hasExMin == 0 || x > f.exMin) && (l&hasExMax == 0 || x < f.exMax)
}

func (f *fastSchema) validArray(a []any) bool {
	if (f.minItems >= 0 && len(a) < f.minItems) || (f.maxItems >= 0 && len(a) > f.maxItems) {
		return false
	}
	if f.items != nil {
		for _, it := range a {
			if !f.items.valid(it) {
				return false
			}
		}
	}
	return true
}

func (f *fastSchema) validObject(o map[string]any) bool {
	if (f.minProps >= 0 && len(o) < f.minProps) || (f.maxProps >= 0 && len(o) > f.maxProps) {
		return false
	}
	for _, name := range f.required {
		if _, ok := o[name]; !ok {
			return false
		}
	}
	for k, v := range o {
		sub, known := f.props[k]
		switch {
		case known:
			if !sub.valid(v) {
				return false
			}
		case f.noExtra:
			return false
		case f.extra != nil:
			if !f.extra.valid(v) {
				return false
			}
		}
	}
	return true
}
