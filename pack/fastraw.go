package pack

import (
	"strconv"
	"unicode/utf8"

	"github.com/kindgi/agents/internal/jsonscan"
)

// FastAccepts reports whether raw is JSON that the schema certainly
// accepts, found by the simple-schema check straight from the bytes
// (nothing decoded, no issues built). false means only "not known here":
// call Validate for the answer and the issues.
func (s *Schema) FastAccepts(raw []byte) bool {
	return s.fast != nil && s.fast.validJSON(raw)
}

// anyValue is the fastSchema that accepts any value: what a property
// without a schema, an item without items, or an additional property
// without additionalProperties is checked against (syntax only).
var anyValue = &fastSchema{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1, minProps: -1, maxProps: -1}

// maxRawDepth bounds the nesting validJSON follows; deeper values are left
// to the full validator.
const maxRawDepth = 512

// validJSON reports whether raw is exactly one JSON value (whitespace
// around it allowed) that f certainly accepts. It is conservative where
// decoding matters: a string with an escape, a string that is not valid
// UTF-8, a number that must be compared or be an integer but is not a
// plain integer of at most 15 digits, a min/maxProperties (duplicate keys
// count once when decoded) all give false. Numbers it compares are exact
// in float64, so the answer holds for a float64 decode and for an exact
// (json.Number) one alike.
func (f *fastSchema) validJSON(raw []byte) bool {
	p := rawParser{Scanner: jsonscan.Scanner{B: raw}}
	p.WS()
	if !p.value(f) {
		return false
	}
	p.WS()
	return p.I == len(p.B)
}

// rawParser walks JSON bytes, checking them against a fastSchema.
type rawParser struct {
	jsonscan.Scanner
	depth int
}

// allows reports whether f's type admits t.
func (f *fastSchema) allows(t typeSet) bool { return f.types == 0 || f.types&t != 0 }

// value parses one value at p.I and checks it against f.
func (p *rawParser) value(f *fastSchema) bool {
	switch p.Peek() {
	case '{':
		return p.object(f)
	case '[':
		return p.array(f)
	case '"':
		s, ok := p.PlainString()
		if !ok || !utf8.Valid(s) || !f.allows(typeString) {
			return false
		}
		if f.hasEnum && !f.inEnumBytes(s) {
			return false
		}
		if f.minLen >= 0 || f.maxLen >= 0 {
			n := utf8.RuneCount(s)
			return (f.minLen < 0 || n >= f.minLen) && (f.maxLen < 0 || n <= f.maxLen)
		}
		return true
	case 't':
		return p.Literal("true") && f.allows(typeBoolean) && (!f.hasEnum || f.inEnum(true))
	case 'f':
		return p.Literal("false") && f.allows(typeBoolean) && (!f.hasEnum || f.inEnum(false))
	case 'n':
		return p.Literal("null") && f.allows(typeNull) && (!f.hasEnum || f.inEnum(nil))
	}
	return p.number(f)
}

// number parses a JSON number and checks it against f.
func (p *rawParser) number(f *fastSchema) bool {
	start := p.I
	plain, ok := p.Number()
	if !ok || f.hasEnum || !f.allows(typeNumber|typeInteger) {
		return false // enums hold no numbers
	}
	needValue := f.limitFlags != 0 || (f.types != 0 && f.types&typeNumber == 0)
	if !needValue {
		return true
	}
	if !plain {
		return false
	}
	n, err := strconv.ParseInt(string(p.B[start:p.I]), 10, 64)
	return err == nil && f.validNumber(float64(n))
}

func (p *rawParser) array(f *fastSchema) bool {
	if !f.allows(typeArray) || f.hasEnum || p.depth >= maxRawDepth {
		return false
	}
	p.depth++
	defer func() { p.depth-- }()
	items := f.items
	if items == nil {
		items = anyValue
	}
	n := 0
	if !p.Open(']') {
		for more := true; more; {
			p.WS()
			if !p.value(items) {
				return false
			}
			n++
			var ok bool
			if more, ok = p.Next(']'); !ok {
				return false
			}
		}
	}
	return (f.minItems < 0 || n >= f.minItems) && (f.maxItems < 0 || n <= f.maxItems)
}

func (p *rawParser) object(f *fastSchema) bool {
	if !f.allows(typeObject) || f.hasEnum || p.depth >= maxRawDepth ||
		f.minProps >= 0 || f.maxProps >= 0 || len(f.required) > 64 {
		return false
	}
	p.depth++
	defer func() { p.depth-- }()
	var seen uint64
	if !p.Open('}') {
		for more := true; more; {
			key, ok := p.Key()
			if !ok || !utf8.Valid(key) {
				return false
			}
			sub, known := f.props[string(key)]
			switch {
			case known:
			case f.noExtra:
				return false
			case f.extra != nil:
				sub = f.extra
			default:
				sub = anyValue
			}
			if !p.value(sub) {
				return false
			}
			for k, name := range f.required {
				if string(key) == name {
					seen |= 1 << k
				}
			}
			if more, ok = p.Next('}'); !ok {
				return false
			}
		}
	}
	return seen == 1<<len(f.required)-1
}

// inEnumBytes is inEnum for a string given as bytes.
func (f *fastSchema) inEnumBytes(s []byte) bool {
	for _, e := range f.enum {
		if e, ok := e.(string); ok && string(s) == e {
			return true
		}
	}
	return false
}
