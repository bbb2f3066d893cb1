package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
)

// canonicalJSON returns v in the form json.Unmarshal gives it in an `any`:
// nil, string, bool, float64, []any or map[string]any, deep-copied. A
// json.Number becomes a float64; other Go values (int, []string, structs)
// go through encoding/json. It fails for what JSON cannot carry unchanged:
// NaN, ±Inf, a number out of float64 range, invalid UTF-8, or a value
// encoding/json cannot marshal.
func canonicalJSON(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool:
		return x, nil
	case string:
		if !utf8.ValidString(x) {
			return nil, errors.New("a string is not valid UTF-8")
		}
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%v is not a finite number", x)
		}
		return x, nil
	case json.Number:
		// Decoding as JSON accepts only JSON number literals in float64
		// range (strconv.ParseFloat would also take "NaN", "Inf", "0x1p4").
		var f float64
		if err := json.Unmarshal([]byte(x), &f); err != nil {
			return nil, fmt.Errorf("%s is not a JSON number in float64 range", quote(string(x)))
		}
		return f, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := canonicalJSON(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if !utf8.ValidString(k) {
				return nil, errors.New("an object key is not valid UTF-8")
			}
			c, err := canonicalJSON(e)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// fitsType returns what is wrong with a canonical default for a parameter
// of type typ, or "".
func fitsType(v any, typ string) string {
	ok := false
	switch typ {
	case TypeString:
		_, ok = v.(string)
	case TypeNumber:
		_, ok = v.(float64)
	case TypeInteger:
		f, isNum := v.(float64)
		if isNum && f != math.Trunc(f) {
			return fmt.Sprintf("default %v has a fraction, but the parameter's type is integer: give a whole number", f)
		}
		ok = isNum
	case TypeBoolean:
		_, ok = v.(bool)
	case TypeObject:
		_, ok = v.(map[string]any)
	case TypeArray:
		_, ok = v.([]any)
	}
	if ok {
		return ""
	}
	return fmt.Sprintf("default is %s, but the parameter's type is %s: give %s, or change the type", describe(v), typ, article(typ))
}

// describe names the JSON kind of a canonical value.
func describe(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return "null"
}

// article returns "a number", "an object", … for a parameter type.
func article(typ string) string {
	switch typ {
	case TypeInteger:
		return "a whole number"
	case TypeObject, TypeArray:
		return "an " + typ
	}
	return "a " + typ
}
