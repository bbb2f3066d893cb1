package tmpl

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/osteele/liquid/expressions"
	"github.com/osteele/liquid/values"
)

// This file evaluates the condition of an if, elsif or unless tag as
// LiquidJS does, where osteele/liquid's expression operators differ: and
// and or group from the right and both operands are evaluated; contains
// tests a list's items (a range is a list), a string's substrings and is
// false for anything else (a map's keys are not tested); == compares lists
// item by item and other values strictly (1 == "1" is false); <, <=, > and
// >= apply JavaScript's coercions; the nil literal is LiquidJS's NullDrop
// (equal to nil, never less or greater than anything); a property of nil is
// nil. Only the operands are osteele/liquid expressions.

// cond is a compiled condition: an operand, a comparison, not, and or or.
type cond struct {
	op          string // "", "and", "or", "not", or a comparison operator
	left, right *cond
	// An operand (op ""): its expression and the variable paths it reads,
	// or lit, the value of the nil, empty or blank literal.
	expr  expressions.Expression
	paths [][]string
	lit   any
}

// comparisons are the comparison operators, contains included.
var comparisons = map[string]bool{"==": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true, "contains": true}

// parseCond compiles a condition. The operator <> is refused: LiquidJS
// has no such operator and finds every condition written with it false.
func parseCond(src string) (*cond, error) {
	toks := exprTokens(src)
	if slices.Contains(toks, "<>") {
		return nil, &RefusedError{Construct: "the operator <>", Reason: "LiquidJS has no such operator and reads every comparison written with it as false; use !="}
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("syntax error: the condition is empty")
	}
	return condOf(toks)
}

// condOf compiles tokens: the first and/or splits, the rest grouped from
// the right as LiquidJS does.
func condOf(toks []string) (*cond, error) {
	for i, t := range toks {
		if t == "and" || t == "or" {
			return binaryOf(toks, i, comparisonOf, condOf)
		}
	}
	return comparisonOf(toks)
}

// comparisonOf compiles a comparison, not, or a single operand.
func comparisonOf(toks []string) (*cond, error) {
	if len(toks) == 0 {
		return nil, fmt.Errorf("syntax error: an operand is missing beside and/or")
	}
	if toks[0] == "not" && len(toks) > 1 {
		inner, err := comparisonOf(toks[1:])
		if err != nil {
			return nil, err
		}
		return &cond{op: "not", left: inner}, nil
	}
	for i, t := range toks {
		if !comparisons[t] {
			continue
		}
		return binaryOf(toks, i, operandOf, operandOf)
	}
	return operandOf(toks)
}

// binaryOf compiles toks split at the operator toks[i]: left compiles the
// tokens before it, right those after.
func binaryOf(toks []string, i int, left, right func([]string) (*cond, error)) (*cond, error) {
	l, err := left(toks[:i])
	if err != nil {
		return nil, err
	}
	r, err := right(toks[i+1:])
	if err != nil {
		return nil, err
	}
	return &cond{op: toks[i], left: l, right: r}, nil
}

func operandOf(toks []string) (*cond, error) {
	if len(toks) == 0 {
		return nil, fmt.Errorf("syntax error: a comparison lacks an operand")
	}
	src := strings.Join(toks, " ")
	switch src {
	case "nil":
		return &cond{lit: nullDrop{}}, nil
	case emptyName, blankName:
		return &cond{lit: literalBindings[src]}, nil
	}
	e, err := expressions.Parse(src)
	if err != nil {
		return nil, err
	}
	vars, _, _ := scanExpr(src)
	return &cond{expr: e, paths: vars}, nil
}

// eval evaluates c in ctx to a boolean (an operand: its truthiness).
func (c *cond) eval(ctx evaluator, st *state) (bool, error) {
	switch c.op {
	case "":
		v, err := c.value(ctx, st)
		if err != nil {
			return false, err
		}
		return truthy(v), nil
	case "and", "or":
		l, err := c.left.eval(ctx, st)
		if err != nil {
			return false, err
		}
		r, err := c.right.eval(ctx, st)
		if err != nil {
			return false, err
		}
		if c.op == "and" {
			return l && r, nil
		}
		return l || r, nil
	case "not":
		v, err := c.left.eval(ctx, st)
		return !v, err
	}
	l, err := c.left.value(ctx, st)
	if err != nil {
		return false, err
	}
	r, err := c.right.value(ctx, st)
	if err != nil {
		return false, err
	}
	return compare(c.op, l, r), nil
}

// value evaluates an operand.
func (c *cond) value(ctx evaluator, st *state) (any, error) {
	if c.lit != nil {
		return c.lit, nil
	}
	return evalOperand(ctx, st, c.expr, c.paths)
}

// evaluator is what a condition is evaluated in: a render's context, or
// a filter's scope (scopeEval).
type evaluator interface {
	Bindings() map[string]any
	Evaluate(expressions.Expression) (any, error)
}

// nullDrop is LiquidJS's nil literal: equal to nil, never ordered.
type nullDrop struct{}

// truthy is LiquidJS's isTruthy: everything but false and nil.
func truthy(v any) bool {
	switch v.(type) {
	case nullDrop, jsUndefined:
		return false
	}
	v = values.ToLiquid(v)
	return v != nil && v != false
}

// evalOperand evaluates an operand strictly, as LiquidJS's strictVariables
// does: an unbound variable or a missing key of a map is an
// *UndefinedError naming it, a property of nil is nil.
func evalOperand(ctx evaluator, st *state, e expressions.Expression, paths [][]string) (any, error) {
	scope := ctx.Bindings()
	if name := missingKey(paths, scope); name != "" {
		return nil, &UndefinedError{Name: name}
	}
	v, err := ctx.Evaluate(e)
	if err != nil && isUndefined(err) {
		if !nilAlong(paths, scope) {
			return nil, &UndefinedError{Name: st.undefinedName()}
		}
		v, err = e.Evaluate(expressions.NewContext(scope, st.lenient))
		if err != nil && isUndefined(err) {
			return nil, &UndefinedError{Name: st.undefinedName()}
		}
	}
	return v, err
}

// compare applies a comparison operator as LiquidJS does.
func compare(op string, l, r any) bool {
	switch op {
	case "==":
		return jsEquals(l, r)
	case "!=", "<>":
		return !jsEquals(l, r)
	case "contains":
		return jsContains(l, r)
	}
	if isDrop(l) || isDrop(r) {
		return false
	}
	return jsOrder(op, values.ToLiquid(l), values.ToLiquid(r))
}

func isDrop(v any) bool {
	switch v.(type) {
	case emptyDrop, nullDrop:
		return true
	}
	return false
}

// jsEquals is LiquidJS's equals: a drop compares itself, lists compare
// item by item, other values strictly (numbers by value), maps by
// identity.
func jsEquals(l, r any) bool {
	if _, null := r.(nullDrop); null {
		if d, ok := l.(emptyDrop); ok {
			return d.Equal(values.ValueOf(nil))
		}
	}
	if _, null := l.(nullDrop); null {
		if d, ok := r.(emptyDrop); ok && d.blank {
			return false // NullDrop reads the drop's value, ""
		}
	}
	switch d := l.(type) {
	case emptyDrop:
		return d.Equal(values.ValueOf(r))
	case nullDrop:
		_, null := r.(nullDrop)
		return null || values.ToLiquid(r) == nil
	}
	switch d := r.(type) {
	case emptyDrop:
		return d.Equal(values.ValueOf(l))
	case nullDrop:
		return values.ToLiquid(l) == nil
	}
	l, r = values.ToLiquid(l), values.ToLiquid(r)
	if isNumber(l) || isNumber(r) {
		return isNumber(l) && isNumber(r) && number(l) == number(r)
	}
	if la, ok := listOf(l); ok {
		ra, ok := listOf(r)
		if !ok || len(la) != len(ra) {
			return false
		}
		for i := range la {
			if !jsEquals(la[i], ra[i]) {
				return false
			}
		}
		return true
	}
	switch l.(type) {
	case nil, bool, string:
		return l == r
	}
	lv, rv := reflect.ValueOf(l), reflect.ValueOf(r)
	if lv.Kind() == reflect.Map && rv.Kind() == reflect.Map {
		return lv.Pointer() == rv.Pointer()
	}
	return false
}

// listOf returns v's items when it is a list or a range.
func listOf(v any) ([]any, bool) {
	switch v := v.(type) {
	case values.Range:
		return v.AsArray(), true
	case []any:
		return v, true
	}
	rv := reflect.ValueOf(v)
	if v != nil && (rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array) {
		return toArray(v), true
	}
	return nil, false
}

// jsContains is LiquidJS's contains: an item of a list equal to r, r's
// string in a string, else false.
func jsContains(l, r any) bool {
	l = values.ToLiquid(l)
	if items, ok := listOf(l); ok {
		for _, it := range items {
			if jsEquals(it, r) {
				return true
			}
		}
		return false
	}
	s, ok := l.(string)
	if !ok {
		return false
	}
	if _, isNull := r.(nullDrop); isNull {
		r = nil
	}
	return strings.Contains(s, jsPrimitiveString(values.ToLiquid(r)))
}

// jsPrimitiveString is JavaScript's String(v): nil is "null", a list its
// items joined with ",", a map "[object Object]".
func jsPrimitiveString(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return v
	case emptyDrop:
		return ""
	}
	if items, ok := listOf(v); ok {
		parts := make([]string, len(items))
		for i, it := range items {
			if it = values.ToLiquid(it); it != nil {
				parts[i] = jsPrimitiveString(it)
			}
		}
		return strings.Join(parts, ",")
	}
	return jsString(v)
}

// jsOrder is JavaScript's <, <=, > and >=: two strings compare by UTF-16
// code units, anything else as numbers (nil 0, true 1, a string parsed,
// a list through its string); NaN compares false.
func jsOrder(op string, l, r any) bool {
	ls, lok := primitive(l)
	rs, rok := primitive(r)
	if lok && rok {
		c := compareUTF16(ls, rs)
		switch op {
		case "<":
			return c < 0
		case "<=":
			return c <= 0
		case ">":
			return c > 0
		}
		return c >= 0
	}
	a, b := toJSNumber(l), toJSNumber(r)
	switch op {
	case "<":
		return a < b
	case "<=":
		return a <= b
	case ">":
		return a > b
	}
	return a >= b
}

// primitive returns the string JavaScript's ToPrimitive makes of v when it
// is a string, a list or a map.
func primitive(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case nil, bool, int, int64, float64:
		return "", false
	}
	if _, ok := listOf(v); ok {
		return jsPrimitiveString(v), true
	}
	if reflect.ValueOf(v).Kind() == reflect.Map {
		return "[object Object]", true
	}
	return "", false
}

// toJSNumber is JavaScript's Number(v) (NaN kept): nil 0, a boolean 0 or
// 1, a string parsed, a list or map through its string.
func toJSNumber(v any) float64 {
	switch v := v.(type) {
	case nil:
		return 0
	case bool:
		if v {
			return 1
		}
		return 0
	case string:
		return parseJSNumber(v)
	}
	if isNumber(v) {
		return number(v)
	}
	if s, ok := primitive(v); ok {
		return parseJSNumber(s)
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint())
	case reflect.Float32, reflect.Float64:
		return rv.Float()
	}
	return math.NaN()
}

// compareUTF16 compares a and b by UTF-16 code units, as JavaScript does.
func compareUTF16(a, b string) int {
	ar, br := []rune(a), []rune(b)
	unit := func(rs []rune, i int) []uint16 {
		r := rs[i]
		if r >= 0x10000 {
			r -= 0x10000
			return []uint16{uint16(0xD800 + (r >> 10)), uint16(0xDC00 + (r & 0x3FF))}
		}
		return []uint16{uint16(r)}
	}
	var au, bu []uint16
	for i := range ar {
		au = append(au, unit(ar, i)...)
	}
	for i := range br {
		bu = append(bu, unit(br, i)...)
	}
	for i := 0; i < len(au) && i < len(bu); i++ {
		if au[i] != bu[i] {
			if au[i] < bu[i] {
				return -1
			}
			return 1
		}
	}
	return len(au) - len(bu)
}
