package pack

import (
	"encoding/json"
	"math/big"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// How issues write paths and values: JSON Pointers, schema fragments and
// numbers the way Ajv (JavaScript) writes them.

// schemaPath is the URI fragment of the failing keyword of e: the fragment
// of the schema's location followed by the keyword's path.
func schemaPath(e *jsonschema.ValidationError) string {
	frag := ""
	if i := strings.IndexByte(e.SchemaURL, '#'); i >= 0 {
		frag = e.SchemaURL[i+1:]
	}
	var b strings.Builder
	b.WriteByte('#')
	b.WriteString(frag)
	if e.ErrorKind != nil {
		for _, tok := range e.ErrorKind.KeywordPath() {
			b.WriteByte('/')
			b.WriteString(escape(tok))
		}
	}
	return b.String()
}

// pointer is the JSON Pointer of an instance location; "" for the root.
func pointer(loc []string) string {
	var b strings.Builder
	for _, tok := range loc {
		b.WriteByte('/')
		b.WriteString(escape(tok))
	}
	return b.String()
}

var (
	escaper   = strings.NewReplacer("~", "~0", "/", "~1")
	unescaper = strings.NewReplacer("~1", "/", "~0", "~")
)

func escape(tok string) string   { return escaper.Replace(tok) }
func unescape(tok string) string { return unescaper.Replace(tok) }

// lookup returns the value at loc in inst, or nil.
func lookup(inst any, loc []string) any {
	for _, tok := range loc {
		switch x := inst.(type) {
		case map[string]any:
			inst = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			inst = x[i]
		default:
			return nil
		}
	}
	return inst
}

func limit(n int) map[string]any { return map[string]any{"limit": float64(n)} }

// ratFloat is r as a float64, the way a JSON number decodes.
func ratFloat(r *big.Rat) float64 {
	f, _ := r.Float64()
	return f
}

// ratString formats r as JavaScript prints a number.
func ratString(r *big.Rat) string {
	return jsNumber(ratFloat(r))
}

// jsNumber formats f as JavaScript's Number.prototype.toString does for the
// common range: integers in full, other values in the shortest form.
func jsNumber(f float64) string {
	a := f
	if a < 0 {
		a = -a
	}
	if a != 0 && (a >= 1e21 || a < 1e-6) {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		// JavaScript writes 1e+21 and 1e-7 (no leading zero in the exponent).
		s = strings.Replace(s, "e+0", "e+", 1)
		return strings.Replace(s, "e-0", "e-", 1)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// toAny converts a slice to []any.
func toAny[T any](s []T) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = normalize(v)
	}
	return out
}

// normalize converts a decoded schema value to what encoding/json decodes
// into an any: json.Number and ints become float64.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return x.String()
		}
		return f
	case int:
		return float64(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	}
	return v
}
