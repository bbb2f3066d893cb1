package tmpl

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/osteele/liquid/values"
)

// jsFilter is a filter written here with LiquidJS's semantics: it takes
// the input and the arguments as evaluated, and coerces them the way
// LiquidJS does (stringify for strings, toNumber for numbers, toArray for
// lists) instead of failing on the wrong type.
type jsFilter func(in any, args []any) (any, error)

// jsFilterTable lists the filters that replace osteele/liquid's filter of
// the same name, or add one LiquidJS has and it lacks (addJSFilters adds
// the rest). The ones not listed are osteele/liquid's.
var jsFilterTable = map[string]jsFilter{
	// math: every operand through toNumber (+v || 0), as LiquidJS does
	"abs":        math1(math.Abs),
	"ceil":       math1(math.Ceil),
	"floor":      math1(math.Floor),
	"at_least":   minMax(math.Max),
	"at_most":    minMax(math.Min),
	"plus":       math2(func(a, b float64) float64 { return a + b }),
	"minus":      math2(func(a, b float64) float64 { return a - b }),
	"times":      math2(func(a, b float64) float64 { return a * b }),
	"modulo":     math2(func(a, b float64) float64 { return math.Mod(math.Mod(a, b)+b, b) }),
	"divided_by": dividedBy,
	"round":      round,

	// strings: the input and arguments through stringify
	"append":               appendFilter,
	"prepend":              prependFilter,
	"upcase":               str1(strings.ToUpper),
	"downcase":             str1(strings.ToLower),
	"capitalize":           str1(capitalize),
	"strip":                str1(func(s string) string { return strings.TrimFunc(s, isJSSpace) }),
	"lstrip":               str1(func(s string) string { return strings.TrimLeftFunc(s, isJSSpace) }),
	"rstrip":               str1(func(s string) string { return strings.TrimRightFunc(s, isJSSpace) }),
	"strip_newlines":       str1(func(s string) string { return crlfRE.ReplaceAllString(s, "") }),
	"newline_to_br":        str1(func(s string) string { return crlfRE.ReplaceAllString(s, "<br />\n") }),
	"escape":               str1(escapeHTML),
	"xml_escape":           str1(escapeHTML),
	"escape_once":          str1(func(s string) string { return escapeHTML(unescapeHTML(s)) }),
	"normalize_whitespace": str1(func(s string) string { return jsSpaceRE.ReplaceAllString(s, " ") }),
	"squish":               str1(func(s string) string { return strings.TrimFunc(jsSpaceRE.ReplaceAllString(s, " "), isJSSpace) }),
	"url_encode":           str1(func(s string) string { return strings.ReplaceAll(encodeURIComponent(s), "%20", "+") }),
	"cgi_escape":           str1(cgiEscape),
	"uri_escape":           str1(uriEscape),
	"base64_encode":        str1(func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }),
	"base64_decode":        base64DecodeFilter,
	"sha256":               str1(func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }),
	"hmac_sha256":          hmacSHA256,
	"replace":              replaceFilter,
	"replace_first":        replaceFirst,
	"replace_last":         replaceLast,
	"remove":               func(in any, args []any) (any, error) { return replaceFilter(in, []any{arg(args, 0), ""}) },
	"remove_first":         func(in any, args []any) (any, error) { return replaceFirst(in, []any{arg(args, 0), ""}) },
	"remove_last":          func(in any, args []any) (any, error) { return replaceLast(in, []any{arg(args, 0), ""}) },
	"split":                split,
	"truncate":             truncate,
	"truncatewords":        truncateWords,
	"number_of_words":      numberOfWords,
	"slugify":              slugify,
	"to_integer":           func(in any, _ []any) (any, error) { return jsValue(toJSNumber(values.ToLiquid(in))), nil },
	"raw":                  func(in any, _ []any) (any, error) { return in, nil },

	// lists: the input through toArray
	"first":                    func(in any, _ []any) (any, error) { return firstLast(in, true), nil },
	"last":                     func(in any, _ []any) (any, error) { return firstLast(in, false), nil },
	"join":                     join,
	"reverse":                  reverse,
	"compact":                  compact,
	"concat":                   func(in any, args []any) (any, error) { return concat(toArray(in), toArray(arg(args, 0))), nil },
	"push":                     func(in any, args []any) (any, error) { return concat(toArray(in), []any{arg(args, 0)}), nil },
	"unshift":                  func(in any, args []any) (any, error) { return concat([]any{arg(args, 0)}, toArray(in)), nil },
	"pop":                      pop,
	"shift":                    shift,
	"array_to_sentence_string": toSentence,
	"where":                    filterBy(true),
	"reject":                   filterBy(false),
	"find":                     search(func(i int, item any) any { return item }, nil),
	"find_index":               search(func(i int, item any) any { return i }, nil),
	"has":                      search(func(int, any) any { return true }, false),
	"group_by":                 groupBy,
}

func arg(args []any, i int) any {
	if i < len(args) {
		return args[i]
	}
	return nil
}

// hasArg reports whether the template passed argument i.
func hasArg(args []any, i int) bool { return i < len(args) }

// ---- coercions, as LiquidJS's stringify, toNumber and toArray

// jsString is LiquidJS's stringify: a string as it is, nil as "", a list as
// its items' strings joined with nothing, a number as JavaScript prints it.
func jsString(v any) string {
	v = values.ToLiquid(v)
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case emptyDrop, jsUndefined:
		return ""
	case values.Range:
		var b strings.Builder
		for i := range rangeLen(v) {
			b.WriteString(strconv.Itoa(v.Index(i).(int)))
		}
		return b.String()
	case bool:
		return strconv.FormatBool(v)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return jsNumberString(v)
	case []byte:
		return string(v)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		var b strings.Builder
		for i := range rv.Len() {
			b.WriteString(jsString(rv.Index(i).Interface()))
		}
		return b.String()
	case reflect.Map:
		return "[object Object]"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(rv.Uint(), 10)
	case reflect.Float32:
		return jsNumberString(rv.Float())
	}
	return fmt.Sprint(v)
}

// maxJSInt bounds the integers filters take as counts or positions: far
// past any string or list, and far from overflowing when added to one.
const maxJSInt = 1 << 53

// jsInt converts a number argument to an int, truncated toward zero as
// LiquidJS's integer arguments are used, saturated at ±maxJSInt (so
// 9223372036854775807 is a huge count, never a negative one), NaN as 0.
func jsInt(f float64) int {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= maxJSInt:
		return maxJSInt
	case f <= -maxJSInt:
		return -maxJSInt
	}
	return int(f)
}

// jsNumberString formats f as JavaScript's String(number) does, for the
// numbers templates meet: integers below 1e21 in full, NaN, Infinity,
// other values in their shortest form.
func jsNumberString(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0"
	}
	if a := math.Abs(f); a >= 1e21 || a < 1e-6 {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		// Go writes 1e+21 and 1e-07; JavaScript 1e+21 and 1e-7.
		if i := strings.IndexAny(s, "e"); i >= 0 {
			mant, exp := s[:i], s[i+1:]
			sign := exp[0]
			exp = strings.TrimLeft(exp[1:], "0")
			s = mant + "e" + string(sign) + exp
		}
		return s
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// jsNumber is LiquidJS's toNumber: +v, with NaN as 0.
func jsNumber(v any) float64 {
	return nanZero(toJSNumber(values.ToLiquid(v)))
}

// parseJSNumber is JavaScript's Number(string) for decimal text.
func parseJSNumber(s string) float64 {
	s = strings.TrimFunc(s, isJSSpace)
	if s == "" {
		return 0
	}
	switch s {
	case "Infinity", "+Infinity":
		return math.Inf(1)
	case "-Infinity":
		return math.Inf(-1)
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return math.NaN()
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

// jsValue returns a number result as the engine keeps numbers: an int when
// it is integral (so ranges and integer arguments take it), else a float64.
func jsValue(f float64) any { return numberValue(f) }

// toArray is LiquidJS's toArray: nil is [], a list itself, anything else a
// list of itself.
func toArray(v any) []any {
	v = values.ToLiquid(v)
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		return v
	case values.Range:
		return v.AsArray()
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array {
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = rv.Index(i).Interface()
		}
		return out
	}
	return []any{v}
}

func isJSSpace(r rune) bool { return unicode.IsSpace(r) || r == '\uFEFF' }

var (
	crlfRE    = regexp.MustCompile(`\r?\n`)
	jsSpaceRE = regexp.MustCompile(`[\s\x{00a0}\x{feff}\x{2028}\x{2029}]+`)
)

// ---- math

func math1(f func(float64) float64) jsFilter {
	return func(in any, _ []any) (any, error) { return jsValue(f(jsNumber(in))), nil }
}

// math2 is a filter of two numbers. As in LiquidJS, an argument the
// template leaves out is undefined, which is NaN as a number
// ({{ 7 | plus }} is NaN), whereas nil is 0.
func math2(f func(a, b float64) float64) jsFilter {
	return func(in any, args []any) (any, error) { return jsValue(f(jsNumber(in), jsArgNumber(args, 0))), nil }
}

// minMax is at_least or at_most: LiquidJS's Math.max or Math.min of the
// input and the arguments given, so the input alone without one.
func minMax(f func(a, b float64) float64) jsFilter {
	return func(in any, args []any) (any, error) {
		if !hasArg(args, 0) {
			return jsValue(jsNumber(in)), nil
		}
		return jsValue(f(jsNumber(in), jsNumber(args[0]))), nil
	}
}

// jsArgNumber is argument i through toNumber, NaN when it is left out.
func jsArgNumber(args []any, i int) float64 {
	if !hasArg(args, i) {
		return math.NaN()
	}
	return jsNumber(args[i])
}

func dividedBy(in any, args []any) (any, error) {
	q := jsNumber(in) / jsArgNumber(args, 0)
	if jsTruthy(arg(args, 1)) {
		q = math.Floor(q)
	}
	return jsValue(q), nil
}

// round is LiquidJS's round: half away from zero at the given number of
// decimals.
func round(in any, args []any) (any, error) {
	v, digits := jsNumber(in), jsNumber(arg(args, 0))
	scaled := shiftDecimal(math.Abs(v), digits)
	if !(scaled <= 1<<53-1) {
		return jsValue(v), nil
	}
	r := shiftDecimal(math.Floor(scaled+0.5), -digits)
	if v < 0 {
		r = -r
	}
	return jsValue(r), nil
}

// shiftDecimal multiplies f by 10^exp by moving its decimal exponent, as
// LiquidJS's round does (through f's shortest decimal string), so that
// 1.005 shifted by 2 is 100.5, not 100.49999999999999.
func shiftDecimal(f, exp float64) float64 {
	s := jsNumberString(f)
	mant, pow, _ := strings.Cut(s, "e")
	p := 0.0
	if pow != "" {
		p = parseJSNumber(pow)
	}
	e := p + exp
	if e != math.Trunc(e) {
		return math.NaN()
	}
	r, err := strconv.ParseFloat(mant+"e"+strconv.FormatFloat(e, 'f', -1, 64), 64)
	if err != nil {
		return math.NaN()
	}
	return r
}

func jsTruthy(v any) bool { return v != nil && v != false }

// ---- strings

func str1(f func(string) string) jsFilter {
	return func(in any, _ []any) (any, error) { return f(jsString(in)), nil }
}

var errArgs = errors.New("expects 2 arguments")

func appendFilter(in any, args []any) (any, error) {
	if !hasArg(args, 0) {
		return nil, fmt.Errorf("append %w", errArgs)
	}
	return jsString(in) + jsString(args[0]), nil
}

func prependFilter(in any, args []any) (any, error) {
	if !hasArg(args, 0) {
		return nil, fmt.Errorf("prepend %w", errArgs)
	}
	return jsString(args[0]) + jsString(in), nil
}

func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return strings.ToUpper(string(r)) + strings.ToLower(s[n:])
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")
var htmlUnescaper = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'")

func escapeHTML(s string) string   { return htmlEscaper.Replace(s) }
func unescapeHTML(s string) string { return htmlUnescaper.Replace(s) }

// encodeURIComponent is JavaScript's: everything but A–Z a–z 0–9 - _ . ! ~ * ' ( )
// is percent-encoded as UTF-8.
func encodeURIComponent(s string) string { return percentEncode(s, "-_.!~*'()") }

func percentEncode(s, keep string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte(keep, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func cgiEscape(s string) string {
	e := strings.ReplaceAll(encodeURIComponent(s), "%20", "+")
	return strings.NewReplacer("!", "%21", "'", "%27", "(", "%28", ")", "%29", "*", "%2A").Replace(e)
}

// uriEscape is JavaScript's encodeURI, brackets kept.
func uriEscape(s string) string {
	return percentEncode(s, "-_.!~*'();/?:@&=+$,#[]")
}

// base64DecodeFilter is LiquidJS's base64_decode: it fails on a string
// that is not base64 (after white space is removed and, when its length is
// a multiple of 4, up to two "=" at its end: a length of 1 modulo 4 or a
// character outside A–Z, a–z, 0–9, + and /).
func base64DecodeFilter(in any, _ []any) (any, error) {
	s := jsString(in)
	t := strings.Map(func(r rune) rune {
		if strings.ContainsRune("\t\n\f\r ", r) {
			return -1
		}
		return r
	}, s)
	if len(t)%4 == 0 {
		t = strings.TrimSuffix(t, "=")
		t = strings.TrimSuffix(t, "=")
	}
	if len(t)%4 == 1 || strings.IndexFunc(t, func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '+' || r == '/')
	}) >= 0 {
		return nil, errors.New("invalid base64 provided to base64_decode")
	}
	return base64Decode(t), nil
}

func base64Decode(s string) string {
	s = strings.TrimRight(s, "=")
	b, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		b, _ = base64.RawURLEncoding.DecodeString(s)
	}
	return utf8Replace(b)
}

// utf8Replace decodes b as UTF-8 as Node's Buffer.toString does (the
// WHATWG decoder): each maximal prefix of a valid sequence that is cut
// short, and each byte that starts none, is one U+FFFD.
func utf8Replace(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var out strings.Builder
	for i := 0; i < len(b); {
		if r, n := utf8.DecodeRune(b[i:]); r != utf8.RuneError || n > 1 {
			out.WriteRune(r)
			i += n
			continue
		}
		// The longest prefix of a sequence b[i] starts that is still
		// valid counts as one error.
		need, lo, hi := 0, byte(0x80), byte(0xBF)
		switch c := b[i]; {
		case c >= 0xC2 && c <= 0xDF:
			need = 1
		case c == 0xE0:
			need, lo = 2, 0xA0
		case c >= 0xE1 && c <= 0xEC || c == 0xEE || c == 0xEF:
			need = 2
		case c == 0xED:
			need, hi = 2, 0x9F
		case c == 0xF0:
			need, lo = 3, 0x90
		case c >= 0xF1 && c <= 0xF3:
			need = 3
		case c == 0xF4:
			need, hi = 3, 0x8F
		}
		j := i + 1
		for k := 0; k < need && j < len(b); k++ {
			if b[j] < lo || b[j] > hi {
				break
			}
			lo, hi = 0x80, 0xBF
			j++
		}
		out.WriteRune(utf8.RuneError)
		i = j
	}
	return out.String()
}
func hmacSHA256(in any, args []any) (any, error) {
	m := hmac.New(sha256.New, []byte(jsString(arg(args, 0))))
	m.Write([]byte(jsString(in)))
	return hex.EncodeToString(m.Sum(nil)), nil
}

// valueLimit is the error of a filter refusing to build a result past
// MaxValue. A filter whose result can outgrow its input and arguments
// together (replace, join, split, sample, json) measures the result before
// building it, so a template cannot make it allocate more than about
// MaxValue in one call.
func valueLimit() error { return &LimitError{Limit: "value", Max: MaxValue} }

func replaceFilter(in any, args []any) (any, error) {
	s, p, r := jsString(in), jsString(arg(args, 0)), jsString(arg(args, 1))
	// strings.Count of "" is the rune count + 1, as many places as
	// ReplaceAll inserts r at.
	if n := strings.Count(s, p); len(r) > len(p) && n > (MaxValue-len(s))/(len(r)-len(p)) {
		return nil, valueLimit()
	}
	return strings.ReplaceAll(s, p, r), nil
}

func replaceFirst(in any, args []any) (any, error) {
	return strings.Replace(jsString(in), jsString(arg(args, 0)), jsString(arg(args, 1)), 1), nil
}

func replaceLast(in any, args []any) (any, error) {
	s, p := jsString(in), jsString(arg(args, 0))
	i := strings.LastIndex(s, p)
	if i < 0 {
		return s, nil
	}
	return s[:i] + jsString(arg(args, 1)) + s[i+len(p):], nil
}

// split is LiquidJS's: JavaScript's split on the separator, trailing empty
// strings removed.
func split(in any, args []any) (any, error) {
	s, sep := jsString(in), jsString(arg(args, 0))
	// n strings of the result, each an item of entrySize and its bytes
	// (what sizeOf measures of the result).
	if n := strings.Count(s, sep); n > (MaxValue-len(s))/entrySize {
		return nil, valueLimit()
	}
	var parts []string
	if sep == "" {
		for _, r := range s {
			parts = append(parts, string(r))
		}
	} else {
		parts = strings.Split(s, sep)
	}
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out, nil
}

// truncateArgs reads the arguments of truncate and truncatewords: the
// length (def when not given) and the ellipsis ("..." when not given).
func truncateArgs(args []any, def int) (int, string) {
	n, o := def, "..."
	if hasArg(args, 0) {
		n = jsInt(jsNumber(args[0]))
	}
	if hasArg(args, 1) {
		o = jsString(args[1])
	}
	return n, o
}

func truncate(in any, args []any) (any, error) {
	s := jsString(in)
	l, o := truncateArgs(args, 50)
	n := utf8.RuneCountInString(s)
	if n <= l {
		return in, nil
	}
	keep := max(l-utf8.RuneCountInString(o), 0)
	return string([]rune(s)[:keep]) + o, nil
}

func truncateWords(in any, args []any) (any, error) {
	s := jsString(in)
	words, o := truncateArgs(args, 15)
	arr := jsSpaceRE.Split(strings.TrimLeftFunc(s, isJSSpace), -1)
	if words <= 0 {
		words = 1
	}
	ret := strings.Join(arr[:min(words, len(arr))], " ")
	if len(arr) >= words {
		ret += o
	}
	return ret, nil
}

func numberOfWords(in any, _ []any) (any, error) {
	s := strings.TrimFunc(jsString(in), isJSSpace)
	if s == "" {
		return 0, nil
	}
	return len(jsSpaceRE.Split(s, -1)), nil
}

var (
	slugDefaultRE = regexp.MustCompile(`[^\p{M}\p{L}\p{Nd}]+`)
	slugPrettyRE  = regexp.MustCompile(`[^\p{M}\p{L}\p{Nd}._~!$&'()+,;=@]+`)
	slugASCIIRE   = regexp.MustCompile(`[^A-Za-z0-9]+`)
	slugRawRE     = regexp.MustCompile(`\s+`)
)

func slugify(in any, args []any) (any, error) {
	s := jsString(in)
	mode := "default"
	if hasArg(args, 0) && args[0] != nil {
		mode = jsString(args[0])
	}
	var re *regexp.Regexp
	switch mode {
	case "raw":
		re = slugRawRE
	case "pretty":
		re = slugPrettyRE
	case "ascii":
		re = slugASCIIRE
	case "none":
	default:
		re = slugDefaultRE
	}
	if re != nil {
		s = re.ReplaceAllString(s, "-")
		s = strings.TrimPrefix(s, "-")
		s = strings.TrimSuffix(s, "-")
	}
	if !jsTruthy(arg(args, 1)) {
		s = strings.ToLower(s)
	}
	return s, nil
}

// ---- lists

// firstLast is LiquidJS's first and last: the first or last item of a list
// or character of a string, else "".
func firstLast(in any, first bool) any {
	in = values.ToLiquid(in)
	if s, ok := in.(string); ok {
		if s == "" {
			return ""
		}
		if first {
			r, _ := utf8.DecodeRuneInString(s)
			return string(r)
		}
		r, _ := utf8.DecodeLastRuneInString(s)
		return string(r)
	}
	rv := reflect.ValueOf(in)
	if in == nil || rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		if r, ok := in.(values.Range); ok && rangeLen(r) > 0 {
			if first {
				return r.Index(0)
			}
			return rangeEnd(r)
		}
		return ""
	}
	if rv.Len() == 0 {
		return nil
	}
	if first {
		return rv.Index(0).Interface()
	}
	return rv.Index(rv.Len() - 1).Interface()
}

func join(in any, args []any) (any, error) {
	arr := toArray(in)
	sep := " "
	if a := arg(args, 0); a != nil {
		sep = jsString(a)
	}
	if len(arr) > 1 && len(sep) > 0 && len(arr)-1 > MaxValue/len(sep) {
		return nil, valueLimit()
	}
	total := max(len(arr)-1, 0) * len(sep)
	parts := make([]string, len(arr))
	for i, v := range arr {
		parts[i] = jsJoinString(v)
		total += len(parts[i])
		if total > MaxValue {
			return nil, valueLimit()
		}
	}
	return strings.Join(parts, sep), nil
}

// jsJoinString is how Array.prototype.join writes an item: nil as "",
// a nested list joined with ",".
func jsJoinString(v any) string {
	v = values.ToLiquid(v)
	if v == nil {
		return ""
	}
	rv := reflect.ValueOf(v)
	if _, ok := v.(string); !ok && (rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array) {
		parts := make([]string, rv.Len())
		for i := range parts {
			parts[i] = jsJoinString(rv.Index(i).Interface())
		}
		return strings.Join(parts, ",")
	}
	return jsString(v)
}

func reverse(in any, _ []any) (any, error) {
	arr := toArray(in)
	out := make([]any, len(arr))
	for i, v := range arr {
		out[len(arr)-1-i] = v
	}
	return out, nil
}

func compact(in any, _ []any) (any, error) {
	var out []any
	for _, v := range toArray(in) {
		if values.ToLiquid(v) != nil {
			out = append(out, v)
		}
	}
	if out == nil {
		out = []any{}
	}
	return out, nil
}

func concat(a, b []any) []any {
	out := make([]any, 0, len(a)+len(b))
	return append(append(out, a...), b...)
}

func pop(in any, _ []any) (any, error) {
	arr := toArray(in)
	if len(arr) == 0 {
		return []any{}, nil
	}
	return concat(arr[:len(arr)-1], nil), nil
}

func shift(in any, _ []any) (any, error) {
	arr := toArray(in)
	if len(arr) == 0 {
		return []any{}, nil
	}
	return concat(arr[1:], nil), nil
}

func toSentence(in any, args []any) (any, error) {
	arr := toArray(in)
	conn := "and"
	if hasArg(args, 0) {
		conn = jsString(args[0])
	}
	switch len(arr) {
	case 0:
		return "", nil
	case 1:
		return arr[0], nil
	case 2:
		return sentencePart(arr[0]) + " " + conn + " " + sentencePart(arr[1]), nil
	}
	parts := make([]string, len(arr)-1)
	for i := range parts {
		parts[i] = sentencePart(arr[i])
	}
	return strings.Join(parts, ", ") + ", " + conn + " " + sentencePart(arr[len(arr)-1]), nil
}

// sentencePart is an item of array_to_sentence_string: undefined prints
// as "undefined" (JavaScript's string concatenation), nil as "".
func sentencePart(v any) string {
	if _, u := v.(jsUndefined); u {
		return "undefined"
	}
	return jsJoinString(v)
}

// property reads a dotted property path of item, as LiquidJS's where,
// find and group_by do (undefined when it does not resolve).
func property(item any, path string) (any, bool) {
	cur := item
	for _, k := range strings.Split(path, ".") {
		if next, found, known := propertyOf(cur, k); known {
			if !found {
				return nil, false
			}
			cur = next
			continue
		}
		v := values.ValueOf(cur).PropertyValue(values.ValueOf(k))
		if values.IsUndefined(v) {
			return nil, false
		}
		cur = v.Interface()
	}
	return cur, true
}

// matches is LiquidJS's test of a property against the expected value:
// truthiness when none was given, else equality.
func matches(v any, present bool, args []any) bool {
	if !hasArg(args, 1) {
		return present && jsTruthy(v)
	}
	return present && values.Equal(v, args[1])
}

// strictProperty is property for the filters LiquidJS evaluates the
// property of in strict mode (where, reject, find, find_index, has,
// group_by): a property an item lacks is an undefined variable.
func strictProperty(item any, path string) (any, error) {
	v, ok := property(item, path)
	if !ok {
		return nil, &UndefinedError{Name: path}
	}
	return v, nil
}

func filterBy(include bool) jsFilter {
	return func(in any, args []any) (any, error) {
		out := []any{}
		path := jsString(arg(args, 0))
		for _, item := range toArray(in) {
			v, err := strictProperty(item, path)
			if err != nil {
				return nil, err
			}
			if matches(v, true, args) == include {
				out = append(out, item)
			}
		}
		return out, nil
	}
}

func search(result func(int, any) any, notFound any) jsFilter {
	return func(in any, args []any) (any, error) {
		path := jsString(arg(args, 0))
		for i, item := range toArray(in) {
			v, err := strictProperty(item, path)
			if err != nil {
				return nil, err
			}
			if matches(v, true, args) {
				return result(i, item), nil
			}
		}
		return notFound, nil
	}
}

func groupBy(in any, args []any) (any, error) {
	path := jsString(arg(args, 0))
	var keys []any
	groups := map[any][]any{}
	items := enumerate(in)
	for i := range items.n {
		item := items.at(i)
		k, err := strictProperty(item, path)
		if err != nil {
			return nil, err
		}
		if k != nil && !reflect.TypeOf(k).Comparable() {
			k = fmt.Sprint(k)
		}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], item)
	}
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = map[string]any{"name": k, "items": groups[k]}
	}
	return out, nil
}

// decodeURL is LiquidJS's url_decode: "+" as a space, then
// decodeURIComponent (which fails on a malformed escape).
func decodeURL(in any, _ []any) (any, error) {
	s, err := url.PathUnescape(strings.ReplaceAll(jsString(in), "+", " "))
	if err != nil {
		return nil, fmt.Errorf("URI malformed")
	}
	return s, nil
}

// jsFilters is the table of jsFilter, built before filterNames reads it.
var jsFilters = func() map[string]jsFilter {
	m := jsFilterTable
	addJSFilters(m)
	return m
}()

func addJSFilters(jsFilters map[string]jsFilter) {
	jsFilters["url_decode"] = decodeURL
	// osteele/liquid's own, given a list as LiquidJS's toArray makes it.
	jsFilters["sort_natural"] = sortNatural
	for _, name := range []string{"sort", "uniq"} {
		jsFilters[name] = onArray(standard(name))
	}
	jsFilters["default"] = defaultFilter
	jsFilters["map"] = mapFilter
	jsFilters["slice"] = slice
	jsFilters["json"] = jsonFilter
	jsFilters["jsonify"] = jsonFilter
	jsFilters["sum"] = sum
	jsFilters["size"] = size
	jsFilters["sample"] = sample
	date := standard("date")
	for name, format := range dateFormats {
		jsFilters[name] = dateFilter(date, format, utc)
	}
	jsFilters["strip_html"] = str1(stripHTML)
}

// stripHTML is LiquidJS's strip_html: it removes <script>…</script> and
// <style>…</style> blocks, comments <!-- … --> and tags <…>, each from its
// opener to the first closer after it (case-sensitive, as LiquidJS's). An
// opener whose closer is absent is not looked for again; a "<" that opens
// nothing closed ends the stripping, the rest kept as it is.
func stripHTML(s string) string {
	openers := []string{"<script", "<style", "<!--", "<"}
	closers := []string{"</script>", "</style>", "-->", ">"}
	dead := [4]bool{}
	var b strings.Builder
	i := 0
	for i < len(s) {
		lt := strings.IndexByte(s[i:], '<')
		if lt < 0 {
			b.WriteString(s[i:])
			return b.String()
		}
		lt += i
		b.WriteString(s[i:lt])
		next := -1
		for k, op := range openers {
			if dead[k] || !strings.HasPrefix(s[lt:], op) {
				continue
			}
			if e := strings.Index(s[lt+len(op):], closers[k]); e >= 0 {
				next = lt + len(op) + e + len(closers[k])
				break
			}
			dead[k] = true
		}
		if next < 0 {
			b.WriteString(s[lt:])
			return b.String()
		}
		i = next
	}
	return b.String()
}

// sortNatural is LiquidJS's sort_natural: a stable sort of the list (by
// the property given, if any) comparing the values' lower-cased strings,
// nil last.
func sortNatural(in any, args []any) (any, error) {
	items := concat(toArray(in), nil)
	path, byProperty := "", hasArg(args, 0) && arg(args, 0) != nil
	if byProperty {
		path = jsString(arg(args, 0))
	}
	key := func(v any) (string, bool) {
		if byProperty {
			v, _ = property(v, path)
		}
		v = values.ToLiquid(v)
		if v == nil {
			return "", false
		}
		return strings.ToLower(jsPrimitiveString(v)), true
	}
	slices.SortStableFunc(items, func(a, b any) int {
		ka, oka := key(a)
		kb, okb := key(b)
		switch {
		case !oka && !okb:
			return 0
		case !oka:
			return 1
		case !okb:
			return -1
		}
		return compareUTF16(ka, kb)
	})
	return items, nil
}

// standard returns osteele/liquid's filter name.
func standard(name string) reflect.Value {
	for _, f := range standardFilters {
		if f.name == name {
			return f.fn
		}
	}
	panic("tmpl: no standard filter " + name)
}

func callStandard(fn reflect.Value, in any, args []any) (any, error) {
	return values.Call(fn, append([]any{in}, args...))
}

func onArray(fn reflect.Value) jsFilter {
	return func(in any, args []any) (any, error) {
		arr := toArray(in)
		if arr == nil {
			arr = []any{}
		}
		return callStandard(fn, arr, args)
	}
}

// mapFilter is LiquidJS's map: the property of each item (nil where it has
// none).
func mapFilter(in any, args []any) (any, error) {
	path := jsString(arg(args, 0))
	arr := toArray(in)
	out := make([]any, len(arr))
	for i, item := range arr {
		v, ok := property(item, path)
		if !ok {
			v = jsUndefined{}
		}
		out[i] = v
	}
	return out, nil
}

// jsUndefined is JavaScript's undefined as an item of a list: what map
// yields for an item without the property. It prints as "", is falsy and
// JSON null, "undefined" in array_to_sentence_string; first or last of it,
// or an _exp filter's item bound to it, is undefined (meteredFilter,
// expFilter). Filters that do not tell it from nil get nil in its place
// (keepsUndefined).
type jsUndefined struct{}

// keepsUndefined are the filters that see jsUndefined items as they are.
var keepsUndefined = map[string]bool{
	"map": true, "first": true, "last": true, "array_to_sentence_string": true, "json": true, "jsonify": true,
	"join": true, "size": true, "reverse": true, "slice": true, "concat": true, "push": true, "unshift": true,
	"shift": true, "pop": true, "where_exp": true, "reject_exp": true, "find_exp": true, "find_index_exp": true,
	"has_exp": true, "group_by_exp": true,
}

// withoutUndefined returns v with its jsUndefined items replaced by nil
// (v itself when it has none).
func withoutUndefined(v any) any {
	list, ok := v.([]any)
	if !ok {
		return v
	}
	out, changed := rewriteList(list, func(e any) (any, bool) {
		_, u := e.(jsUndefined)
		return nil, u
	})
	if !changed {
		return v
	}
	return out
}

func sum(in any, args []any) (any, error) {
	total := 0.0
	for _, item := range toArray(in) {
		v := item
		if hasArg(args, 0) && args[0] != nil {
			v, _ = property(item, jsString(args[0]))
		}
		total += jsNumber(v)
	}
	return jsValue(total), nil
}

// size is LiquidJS's size filter: the length of a string (in UTF-16 code
// units) or list, else 0.
func size(in any, _ []any) (any, error) {
	in = values.ToLiquid(in)
	if s, ok := in.(string); ok {
		n := 0
		for _, r := range s {
			n++
			if r > 0xFFFF {
				n++
			}
		}
		return n, nil
	}
	if r, ok := in.(values.Range); ok {
		return rangeLen(r), nil
	}
	rv := reflect.ValueOf(in)
	if in != nil && (rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array) {
		return rv.Len(), nil
	}
	return 0, nil
}

// sample is LiquidJS's: one item at random, or a list of count of them.
func sample(in any, args []any) (any, error) {
	in = values.ToLiquid(in)
	if in == nil {
		return []any{}, nil
	}
	var items []any
	if s, ok := in.(string); ok {
		if utf8.RuneCountInString(s) > (MaxValue-len(s))/entrySize {
			return nil, valueLimit()
		}
		for _, r := range s {
			items = append(items, string(r))
		}
	} else if list, ok := listOf(in); ok {
		items = concat(list, nil)
	} else {
		for _, r := range jsString(in) {
			items = append(items, string(r))
		}
	}
	rand.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	count := 1
	if hasArg(args, 0) {
		count = jsInt(jsNumber(args[0]))
	}
	if count == 1 {
		if len(items) == 0 {
			return nil, nil
		}
		return items[0], nil
	}
	return items[:max(min(count, len(items)), 0)], nil
}

// jsonFilter is LiquidJS's json (and jsonify): JSON.stringify, with an
// optional indent; no HTML escaping.
// jsonValue is v as JSON.stringify sees it: a range is its list, a number
// that is not finite (NaN, Infinity) is null, in lists and maps too.
func jsonValue(v any) any {
	out, _ := jsonValueChanged(v)
	return out
}

func jsonValueChanged(v any) (any, bool) {
	switch v := v.(type) {
	case values.Range:
		return v.AsArray(), true
	case emptyDrop:
		return map[string]any{}, true // an object without properties
	case jsUndefined:
		return nil, true
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, true
		}
	}
	return rewriteItems(v, jsonValueChanged)
}

func jsonFilter(in any, args []any) (any, error) {
	var b limitedBuilder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if n := jsInt(jsNumber(arg(args, 0))); n > 0 {
		enc.SetIndent("", strings.Repeat(" ", min(n, 10)))
	}
	if err := enc.Encode(jsonValue(values.ToLiquid(in))); err != nil {
		if b.over {
			return nil, valueLimit()
		}
		return nil, err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// defaultFilter is LiquidJS's default: an empty string or list, nil and
// false give the default (false stays with allow_false: true); anything
// else, an empty map included, is kept.
func defaultFilter(in any, args []any) (any, error) {
	v := values.ToLiquid(in)
	def := arg(args, 0)
	switch rv := reflect.ValueOf(v); {
	case v == nil:
		return def, nil
	case rv.Kind() == reflect.String || rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array:
		if rv.Len() > 0 {
			return in, nil
		}
		return def, nil
	case v == false:
		for _, a := range args[min(1, len(args)):] {
			if kw, ok := a.(map[string]any); ok && jsTruthy(kw["allow_false"]) {
				return false, nil
			}
		}
		return def, nil
	}
	return in, nil
}

// limitedBuilder collects at most MaxValue bytes: json's indentation can
// make its text many times the size of the value.
type limitedBuilder struct {
	strings.Builder
	over bool
}

func (b *limitedBuilder) Write(p []byte) (int, error) {
	if b.Len()+len(p) > MaxValue {
		b.over = true
		return 0, valueLimit()
	}
	return b.Builder.Write(p)
}
