package tmpl

import (
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/osteele/liquid/expressions"
	"github.com/osteele/liquid/render"
	"github.com/osteele/liquid/values"
)

// This file renders for, tablerow and capture as LiquidJS does:
//
//   - the collection is one value (a filter after it is refused at
//     Define: LiquidJS ignores it); a list or range is iterated, a
//     non-empty string once (as itself), a map as [key, value] pairs in
//     the order of its keys, anything else (nil, numbers, booleans, the
//     empty string) as an empty list;
//   - for renders its else branch when the collection is empty, before
//     offset and limit are applied; then offset, limit and reversed apply
//     in that order whatever order they are written in (offset and limit
//     as JavaScript's Array.prototype.slice: negative counts from the end);
//   - offset: continue resumes where the last loop over the same variable
//     and collection text stopped (0 the first time);
//   - the loop variable and forloop (tablerowloop) live in the loop's own
//     scope: after the loop they are what they were before (unbound if they
//     were);
//   - a break or continue outside a loop stops the render there, keeping
//     what it wrote (render.go).

// The errors break and continue raise: the loop they are in (or, outside
// a loop, the render) stops at them.
var (
	errLoopBreak    = errors.New("break outside a loop")
	errLoopContinue = errors.New("continue outside a loop")
)

// loopSignalTag compiles break (sig errLoopBreak) or continue. It first
// flushes what osteele/liquid's writer holds back (an empty write does), so
// the text before it is kept when the error unwinds the render.
func loopSignalTag(sig error) render.TagCompiler {
	return func(string) (func(io.Writer, render.Context) error, error) {
		return func(w io.Writer, ctx render.Context) error {
			if _, err := w.Write(nil); err != nil {
				return err
			}
			return ctx.WrapError(sig)
		}, nil
	}
}

// loopSignal reports whether err is a break or continue osteele/liquid's
// tag raised, and which.
func loopSignal(err error) (isBreak, isContinue bool) {
	for err != nil {
		switch err.Error() {
		case "break outside a loop":
			return true, false
		case "continue outside a loop":
			return false, true
		}
		switch e := err.(type) {
		case interface{ Cause() error }:
			if c := e.Cause(); c != err {
				err = c
				continue
			}
			return false, false
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		default:
			return false, false
		}
	}
	return false, false
}

// loopArgs are a for or tablerow tag's parsed arguments.
type loopArgs struct {
	variable   string
	collection expressions.Expression
	collSrc    string
	paths      [][]string // the collection's variable paths
	// offset, limit and cols are nil when absent; offsetContinue is set
	// for offset: continue.
	offset, limit, cols expressions.Expression
	optPaths            [][]string
	offsetContinue      bool
	reversed            bool
}

// parseLoopArgs parses `variable in collection modifiers…` as LiquidJS
// reads it: the modifiers are offset, limit, reversed (and cols for
// tablerow); any other is ignored, as LiquidJS ignores it.
func parseLoopArgs(name, args string) (*loopArgs, error) {
	toks := exprTokens(args)
	if len(toks) < 3 || toks[1] != "in" || !isIdent(toks[0]) {
		return nil, fmt.Errorf("syntax error: %s needs `variable in collection`, got %q", name, strings.TrimSpace(args))
	}
	la := &loopArgs{variable: toks[0], collSrc: toks[2]}
	if strings.Contains(args, "|") && topLevelIndex(args, '|') >= 0 {
		return nil, &RefusedError{Construct: "a filter in a " + name + " tag's collection", Reason: "LiquidJS ignores it and iterates the unfiltered value; assign the filtered value to a variable first"}
	}
	var err error
	if la.collection, err = expressions.Parse(la.collSrc); err != nil {
		return nil, err
	}
	la.paths, _, _ = scanExpr(la.collSrc)
	rest := toks[3:]
	for i := 0; i < len(rest); i++ {
		key := rest[i]
		val := ""
		if strings.HasSuffix(key, ":") {
			key = strings.TrimSuffix(key, ":")
			if i+1 < len(rest) {
				val = rest[i+1]
				i++
			}
		} else if k := strings.IndexByte(key, ':'); k > 0 {
			key, val = key[:k], key[k+1:]
		}
		key = strings.TrimSuffix(key, ",")
		val = strings.TrimSuffix(val, ",")
		if key == "reversed" && val == "" {
			la.reversed = name == "for"
			continue
		}
		if val == "" {
			continue
		}
		if key == "offset" && val == "continue" {
			la.offsetContinue = true
			continue
		}
		e, err := expressions.Parse(val)
		if err != nil {
			return nil, err
		}
		switch key {
		case "offset":
			la.offset = e
		case "limit":
			la.limit = e
		case "cols":
			la.cols = e
		default:
			continue
		}
		p, _, _ := scanExpr(val)
		la.optPaths = append(la.optPaths, p...)
	}
	return la, nil
}

func isIdent(s string) bool {
	if s == "" || !isIdentStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isWordByte(s[i]) && s[i] != '-' {
			return false
		}
	}
	return true
}

// seq is a lazily sliced and reversed list: item i of the loop is
// base(from + i), or base(from + n - 1 - i) reversed.
type seq struct {
	base     func(int) any
	from, n  int
	reversed bool
}

func (s seq) at(i int) any {
	if s.reversed {
		return s.base(s.from + s.n - 1 - i)
	}
	return s.base(s.from + i)
}

// jsSlice is Array.prototype.slice(start, end) on s (end < 0: to the end).
func (s seq) slice(start, end int, toEnd bool) seq {
	norm := func(k int) int {
		if k < 0 {
			return max(s.n+k, 0)
		}
		return min(k, s.n)
	}
	a := norm(start)
	b := s.n
	if !toEnd {
		b = norm(end)
	}
	if b < a {
		b = a
	}
	return seq{base: s.base, from: s.from + a, n: b - a}
}

// enumerate is LiquidJS's toEnumerable of v.
func enumerate(v any) seq {
	v = values.ToLiquid(v)
	switch v := v.(type) {
	case nil, emptyDrop, bool:
		return seq{}
	case string:
		if v == "" {
			return seq{}
		}
		return seq{base: func(int) any { return v }, n: 1}
	case values.Range:
		b := v.Index(0).(int)
		return seq{base: func(i int) any { return b + i }, n: rangeLen(v)}
	case []any:
		return seq{base: func(i int) any { return v[i] }, n: len(v)}
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		return seq{base: func(i int) any { return rv.Index(i).Interface() }, n: rv.Len()}
	case reflect.Map:
		keys := rv.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int {
			return strings.Compare(fmt.Sprint(a.Interface()), fmt.Sprint(b.Interface()))
		})
		return seq{base: func(i int) any {
			return []any{keys[i].Interface(), rv.MapIndex(keys[i]).Interface()}
		}, n: len(keys)}
	}
	return seq{}
}

// jsIndex converts a slice argument as JavaScript's ToIntegerOrInfinity
// does (nil, false and what is not a number are 0).
func jsIndex(v any) int {
	v = values.ToLiquid(v)
	switch v := v.(type) {
	case string:
		return jsInt(math.Trunc(nanZero(parseJSNumber(v))))
	case bool:
		if v {
			return 1
		}
		return 0
	}
	if isNumber(v) {
		return jsInt(math.Trunc(number(v)))
	}
	return 0
}

func nanZero(f float64) float64 {
	if math.IsNaN(f) {
		return 0
	}
	return f
}

// scoped returns a function that restores what name is now in ctx's
// bindings (unbound if it is), for a tag that binds name for its body.
func scoped(ctx render.Context, name string) (restore func()) {
	return restorer(ctx.Bindings(), name)
}

// restorer returns a function that puts m[name] back as it is now
// (deleted if it is absent).
func restorer(m map[string]any, name string) func() {
	old, had := m[name]
	return func() {
		if had {
			m[name] = old
		} else {
			delete(m, name)
		}
	}
}

// items evaluates the collection and enumerates it.
func (la *loopArgs) items(ctx render.Context, st *state) (seq, error) {
	v, err := evalOperand(ctx, st, la.collection, la.paths)
	if err != nil {
		return seq{}, err
	}
	return enumerate(v), nil
}

// evalLoopOption evaluates a loop's offset, limit or cols.
func evalLoopOption(ctx render.Context, st *state, e expressions.Expression, la *loopArgs) (any, error) {
	return evalOperand(ctx, st, e, la.optPaths)
}

// poisonedRegister marks an offset: continue position LiquidJS holds as a
// string that is not a number (see forTag).
const poisonedRegister = math.MinInt

// forTag compiles a for block (see the file comment).
func forTag(n *render.BlockNode) (func(io.Writer, render.Context) error, error) {
	la, err := parseLoopArgs("for", n.Args)
	if err != nil {
		return nil, err
	}
	var els *render.BlockNode
	for _, c := range n.Clauses {
		if c.Name == "else" {
			els = c
		}
	}
	continueKey := la.variable + "-" + la.collSrc
	return func(w io.Writer, ctx render.Context) error {
		st := stateOf(ctx)
		items, err := la.items(ctx, st)
		if err != nil {
			return err
		}
		if items.n == 0 {
			if els != nil {
				return ctx.RenderBlock(w, els)
			}
			return nil
		}
		if st.registers == nil {
			st.registers = map[string]int{}
		}
		offset, poisoned := 0, false
		switch {
		case la.offsetContinue:
			// LiquidJS's register is an empty object until a loop without
			// offset: continue sets it: as an offset it is 0, and the
			// position it is then set to is a string (the object's text
			// and a number), 0 again from then on.
			reg, ok := st.registers[continueKey]
			if !ok || reg == poisonedRegister {
				poisoned = true
			} else {
				offset = reg
				items = items.slice(offset, 0, true)
			}
		case la.offset != nil:
			o, err := evalLoopOption(ctx, st, la.offset, la)
			if err != nil {
				return err
			}
			offset = jsIndex(o)
			items = items.slice(offset, 0, true)
		}
		if la.limit != nil {
			l, err := evalLoopOption(ctx, st, la.limit, la)
			if err != nil {
				return err
			}
			items = items.slice(0, jsIndex(l), false)
		}
		items.reversed = la.reversed
		st.registers[continueKey] = offset + items.n
		if poisoned {
			st.registers[continueKey] = poisonedRegister
		}
		defer scoped(ctx, la.variable)()
		defer scoped(ctx, "forloop")()
		loop := map[string]any{"length": items.n, "name": continueKey}
		for i := range items.n {
			loop["first"], loop["last"] = i == 0, i == items.n-1
			loop["index"], loop["index0"] = i+1, i
			loop["rindex"], loop["rindex0"] = items.n-i, items.n-i-1
			ctx.Set("forloop", loop)
			ctx.Set(la.variable, items.at(i))
			if err := ctx.RenderBlock(w, n); err != nil {
				brk, cont := loopSignal(err)
				if brk {
					break
				}
				if !cont {
					return err
				}
			}
		}
		return nil
	}, nil
}

// tablerowTag compiles a tablerow block as LiquidJS renders it: offset and
// limit slice the collection, cols (else the whole length) cells per row,
// each row <tr class="rowN">, each cell <td class="colN">, and
// tablerowloop (col, col0, col_first, col_last, row, first, last, index,
// index0, rindex, rindex0, length) in the loop's scope.
func tablerowTag(n *render.BlockNode) (func(io.Writer, render.Context) error, error) {
	la, err := parseLoopArgs("tablerow", n.Args)
	if err != nil {
		return nil, err
	}
	return func(w io.Writer, ctx render.Context) error {
		st := stateOf(ctx)
		items, err := la.items(ctx, st)
		if err != nil {
			return err
		}
		offset := 0
		if la.offset != nil {
			o, err := evalLoopOption(ctx, st, la.offset, la)
			if err != nil {
				return err
			}
			offset = jsIndex(o)
		}
		limit, toEnd := 0, true
		if la.limit != nil {
			l, err := evalLoopOption(ctx, st, la.limit, la)
			if err != nil {
				return err
			}
			limit, toEnd = jsIndex(l), false
		}
		// collection.slice(offset, offset + limit)
		if toEnd {
			items = items.slice(offset, 0, true)
		} else {
			items = items.slice(offset, offset+limit, false)
		}
		cols := items.n
		if la.cols != nil {
			c, err := evalLoopOption(ctx, st, la.cols, la)
			if err != nil {
				return err
			}
			if k := jsIndex(c); k != 0 {
				cols = k
			}
		}
		if cols <= 0 {
			cols = max(items.n, 1)
		}
		defer scoped(ctx, la.variable)()
		defer scoped(ctx, "tablerowloop")()
		loop := map[string]any{"length": items.n}
		write := func(s string) error {
			if err := st.charge(len(s)); err != nil {
				return err
			}
			_, err := io.WriteString(w, s)
			return err
		}
		for i := range items.n {
			col0, row := i%cols, i/cols+1
			loop["col"], loop["col0"], loop["row"] = col0+1, col0, row
			loop["col_first"], loop["col_last"] = col0 == 0, col0 == cols-1
			loop["first"], loop["last"] = i == 0, i == items.n-1
			loop["index"], loop["index0"] = i+1, i
			loop["rindex"], loop["rindex0"] = items.n-i, items.n-i-1
			ctx.Set("tablerowloop", loop)
			ctx.Set(la.variable, items.at(i))
			var head strings.Builder
			if col0 == 0 {
				if row != 1 {
					head.WriteString("</tr>")
				}
				fmt.Fprintf(&head, `<tr class="row%d">`, row)
			}
			fmt.Fprintf(&head, `<td class="col%d">`, col0+1)
			if err := write(head.String()); err != nil {
				return err
			}
			if err := ctx.RenderBlock(w, n); err != nil {
				return err
			}
			if err := write("</td>"); err != nil {
				return err
			}
		}
		if items.n > 0 {
			return write("</tr>")
		}
		return nil
	}, nil
}

// captureTag compiles {% capture name %}: the body's text is assigned to
// name (a quoted name too, as LiquidJS allows). A break or continue in the
// body assigns what was written before it, then stops the loop, as in
// LiquidJS.
func captureTag(node render.BlockNode) (func(io.Writer, render.Context) error, error) {
	name := strings.TrimSpace(node.Args)
	if len(name) >= 2 && (name[0] == '"' || name[0] == '\'') && name[len(name)-1] == name[0] {
		name = name[1 : len(name)-1]
	}
	if !isIdent(name) {
		return nil, fmt.Errorf("syntax error: capture tag requires exactly one variable name, got %q", node.Args)
	}
	return func(w io.Writer, ctx render.Context) error {
		var b strings.Builder
		err := ctx.RenderChildren(&b)
		if err != nil {
			if brk, cont := loopSignal(err); !brk && !cont {
				return err
			}
		}
		ctx.Set(name, b.String())
		if err != nil {
			// The text before the capture is kept: flush what the
			// writer holds back, as break does.
			if _, werr := w.Write(nil); werr != nil {
				return werr
			}
			return err
		}
		return nil
	}, nil
}

// undefinedResults are the filters whose result LiquidJS leaves undefined
// when they find nothing (first and last of an empty list, find and
// find_index without a match, their _exp forms): a variable assigned such a
// result is undefined, so reading it fails in strict mode.
var undefinedResults = map[string]bool{
	"first": true, "last": true, "find": true, "find_index": true, "find_exp": true, "find_index_exp": true,
}

// assignTag compiles {% assign name = value %} as LiquidJS has it: the
// value is evaluated strictly (a property of nil is nil), and a value a
// filter left undefined (undefinedResults, and json of undefined) unbinds
// name.
func assignTag(source string) (func(io.Writer, render.Context) error, error) {
	stmt, err := expressions.ParseStatement(expressions.AssignStatementSelector, source)
	if err != nil {
		return nil, err
	}
	if len(stmt.Path) > 1 {
		return nil, fmt.Errorf("syntax error: assign takes a variable name, not a property path (%s)", strings.Join(stmt.Path, "."))
	}
	_, rhs, _ := strings.Cut(source, "=")
	paths, _, _ := scanExpr(rhs)
	name := stmt.Assignment.Variable
	return func(_ io.Writer, ctx render.Context) error {
		st := stateOf(ctx)
		st.undefined = false
		v, err := evalOperand(ctx, st, stmt.ValueFn, paths)
		if err != nil {
			return err
		}
		if st.undefined {
			// The last filter's result is LiquidJS's undefined.
			st.undefined = false
			delete(ctx.Bindings(), name)
			return nil
		}
		ctx.Set(name, v)
		return nil
	}, nil
}
