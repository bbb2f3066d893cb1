package pack

import (
	"strconv"
	"unicode/utf8"
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
	p := rawParser{b: raw}
	p.ws()
	if !p.value(f) {
		return false
	}
	p.ws()
	return p.i == len(p.b)
}

// rawParser walks JSON bytes.
type rawParser struct {
	b     []byte
	i     int
	depth int
}

func (p *rawParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// allows reports whether f's type admits t.
func (f *fastSchema) allows(t typeSet) bool { return f.types == 0 || f.types&t != 0 }

// value parses one value at p.i and checks it against f.
func (p *rawParser) value(f *fastSchema) bool {
	if p.i >= len(p.b) {
		return false
	}
	switch c := p.b[p.i]; c {
	case '{':
		return p.object(f)
	case '[':
		return p.array(f)
	case '"':
		s, ok := p.str()
		if !ok || !f.allows(typeString) {
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
		return p.literal("true") && f.allows(typeBoolean) && (!f.hasEnum || f.inEnum(true))
	case 'f':
		return p.literal("false") && f.allows(typeBoolean) && (!f.hasEnum || f.inEnum(false))
	case 'n':
		return p.literal("null") && f.allows(typeNull) && (!f.hasEnum || f.inEnum(nil))
	}
	return p.number(f)
}

func (p *rawParser) literal(lit string) bool {
	if len(p.b)-p.i < len(lit) || string(p.b[p.i:p.i+len(lit)]) != lit {
		return false
	}
	p.i += len(lit)
	return true
}

// str parses a string without escapes and returns its bytes.
func (p *rawParser) str() ([]byte, bool) {
	start := p.i + 1
	j := start
	for j < len(p.b) && plainByte[p.b[j]] {
		j++
	}
	if j >= len(p.b) || p.b[j] != '"' {
		return nil, false // an escape, a control character, or the end
	}
	p.i = j + 1
	s := p.b[start:j]
	return s, utf8.Valid(s)
}

// plainByte says which bytes stand for themselves inside a JSON string:
// all but the quote, the backslash and the control characters.
var plainByte = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\'
	}
	return t
}()

// number parses a JSON number and checks it against f.
func (p *rawParser) number(f *fastSchema) bool {
	start := p.i
	j := p.i
	if j < len(p.b) && p.b[j] == '-' {
		j++
	}
	digits := j
	switch {
	case j < len(p.b) && p.b[j] == '0':
		j++
	case j < len(p.b) && p.b[j] >= '1' && p.b[j] <= '9':
		for j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9' {
			j++
		}
	default:
		return false
	}
	plain := j-digits <= 15
	if j < len(p.b) && p.b[j] == '.' {
		plain = false
		j++
		if !p.digitsAt(&j) {
			return false
		}
	}
	if j < len(p.b) && (p.b[j] == 'e' || p.b[j] == 'E') {
		plain = false
		j++
		if j < len(p.b) && (p.b[j] == '+' || p.b[j] == '-') {
			j++
		}
		if !p.digitsAt(&j) {
			return false
		}
	}
	p.i = j
	if f.hasEnum || !f.allows(typeNumber|typeInteger) {
		return false // enums hold no numbers
	}
	needValue := f.limitFlags != 0 || (f.types != 0 && f.types&typeNumber == 0)
	if !needValue {
		return true
	}
	if !plain {
		return false
	}
	n, err := strconv.ParseInt(string(p.b[start:j]), 10, 64)
	return err == nil && f.validNumber(float64(n))
}

// digitsAt advances *j over one or more digits.
func (p *rawParser) digitsAt(j *int) bool {
	k := *j
	for *j < len(p.b) && p.b[*j] >= '0' && p.b[*j] <= '9' {
		*j++
	}
	return *j > k
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
	p.i++ // [
	p.ws()
	n := 0
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
	} else {
		for {
			p.ws()
			if !p.value(items) {
				return false
			}
			n++
			p.ws()
			if p.i >= len(p.b) {
				return false
			}
			c := p.b[p.i]
			p.i++
			if c == ']' {
				break
			}
			if c != ',' {
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
	p.i++ // {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
	} else {
		for {
			p.ws()
			if p.i >= len(p.b) || p.b[p.i] != '"' {
				return false
			}
			key, ok := p.str()
			if !ok {
				return false
			}
			p.ws()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return false
			}
			p.i++
			p.ws()
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
			p.ws()
			if p.i >= len(p.b) {
				return false
			}
			c := p.b[p.i]
			p.i++
			if c == '}' {
				break
			}
			if c != ',' {
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
