package tmpl

import (
	"math"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/osteele/liquid/values"
)

// This file holds LiquidJS's date filters: what they read as a date, and
// the time zone they show it in.

// dateFilter is LiquidJS's date (format nil: the template's) or one of
// its fixed-format relatives, in the time zone loc returns: a string or
// time.Time as parseDateIn reads it, a number as seconds since the epoch,
// a boolean as JavaScript's new Date(true|false); nil, a string that is no
// date and anything else come back as they are.
func dateFilter(fn reflect.Value, format any, loc func() *time.Location) jsFilter {
	return func(in any, args []any) (any, error) {
		in = values.ToLiquid(in)
		switch v := in.(type) {
		case nil:
			return nil, nil
		case string:
			t, err := parseDateIn(v, loc())
			if err != nil {
				return v, nil
			}
			in = t
		case time.Time:
			in = v.In(loc())
		case bool:
			// JavaScript's new Date(true) is 1 ms past the epoch.
			ms := int64(0)
			if v {
				ms = 1
			}
			in = time.UnixMilli(ms).In(loc())
		default:
			if !isNumber(v) {
				// LiquidJS parses what is not a date, a number or a
				// string with V8's Date parser; only an invalid date
				// is returned as it is here.
				return in, nil
			}
			f := number(v) * 1000
			if math.IsNaN(f) || math.Abs(f) > 8.64e15 {
				return in, nil
			}
			in = time.UnixMilli(int64(f)).In(loc())
		}
		if format != nil {
			args = []any{format}
		}
		return callStandard(fn, in, args)
	}
}

// zoneRE matches a date string that names its zone or offset.
var zoneRE = regexp.MustCompile(`(Z|[+-]\d\d:?\d\d|\b[A-Z]{3,4})$`)

// parseDateIn parses a date string as LiquidJS does in a process whose
// time zone is loc: a time with an offset or zone is that instant, shown in
// loc; a time without one (and a date alone) is a wall time in loc; digits
// alone are seconds since the Unix epoch.
func parseDateIn(s string, loc *time.Location) (time.Time, error) {
	t, err := values.ParseDate(s)
	if err != nil {
		return t, err
	}
	trimmed := strings.TrimSpace(s)
	if allDigits(trimmed) || s == "now" || s == "today" || zoneRE.MatchString(trimmed) {
		return t.In(loc), nil
	}
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), loc), nil
}

// utc is the time zone of a render that names none.
func utc() *time.Location { return time.UTC }

// slice is LiquidJS's: a list's items or a string's characters (any other
// value stringified) from begin (from the end when negative), length of
// them (1 by default); nil is [].
func slice(in any, args []any) (any, error) {
	in = values.ToLiquid(in)
	if in == nil {
		return []any{}, nil
	}
	if r, ok := in.(values.Range); ok {
		in = r.AsArray() // a range is a list in LiquidJS
	}
	begin := jsInt(jsNumber(arg(args, 0)))
	length := 1
	if hasArg(args, 1) && args[1] != nil {
		length = jsInt(jsNumber(args[1]))
	}
	rv := reflect.ValueOf(in)
	isList := rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array
	if _, isBytes := in.([]byte); isBytes {
		isList = false
	}
	if isList {
		arr := toArray(in)
		if begin < 0 {
			begin += len(arr)
		}
		if begin < 0 || length < 0 {
			return []any{}, nil
		}
		begin = min(begin, len(arr))
		return concat(arr[begin:min(begin+length, len(arr))], nil), nil
	}
	runes := []rune(jsString(in))
	if begin < 0 {
		begin += len(runes)
	}
	if begin < 0 || length < 0 {
		return "", nil
	}
	begin = min(begin, len(runes))
	return string(runes[begin:min(begin+length, len(runes))]), nil
}

// dateFormats are the date filters, by name, and the format each applies
// (nil: the filter's argument).
var dateFormats = map[string]any{
	"date":                nil,
	"date_to_xmlschema":   "%Y-%m-%dT%H:%M:%S%:z",
	"date_to_rfc822":      "%a, %d %b %Y %H:%M:%S %z",
	"date_to_string":      "%d %b %Y",
	"date_to_long_string": "%d %B %Y",
}
