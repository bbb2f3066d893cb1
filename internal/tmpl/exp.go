package tmpl

import (
	"fmt"
	"strings"

	"github.com/osteele/liquid/expressions"
	"github.com/osteele/liquid/values"
)

// This file holds LiquidJS 10's _exp filters: where_exp, reject_exp,
// find_exp, find_index_exp, has_exp and group_by_exp take an item name and
// a Liquid expression in a string, and evaluate the expression for each
// item with the item bound to that name in the render's current scope (a
// filter's state knows the scope: the probes set it before each tag and
// output). The expression is a condition (cond.go) or a value, and may be
// followed by filters. As in LiquidJS, where_exp keeps the items whose
// expression is true itself (not merely truthy), reject_exp those it is not
// true for, find_exp, find_index_exp and has_exp look for the first whose
// value is truthy in JavaScript's sense, group_by_exp groups by the value.

// expFilterNames are the _exp filters.
var expFilterNames = []string{"where_exp", "reject_exp", "find_exp", "find_index_exp", "has_exp", "group_by_exp"}

// scopeEval evaluates expressions in a bindings map, strictly: it is the
// render.Context a condition needs, for a filter.
type scopeEval struct {
	bindings map[string]any
	cfg      expressions.Config
}

func (s scopeEval) Bindings() map[string]any { return s.bindings }

func (s scopeEval) Evaluate(e expressions.Expression) (any, error) {
	return e.Evaluate(expressions.NewContext(s.bindings, s.cfg))
}

// itemExpr is a compiled _exp expression: a condition or value, then
// filters.
type itemExpr struct {
	head    *cond
	filters []itemFilter
}

type itemFilter struct {
	name string
	args []*cond
}

// compileItemExpr compiles the expression of an _exp filter.
func compileItemExpr(src string) (*itemExpr, error) {
	parts := splitTopLevel(src, '|')
	head, err := parseCond(parts[0])
	if err != nil {
		return nil, err
	}
	ie := &itemExpr{head: head}
	for _, p := range parts[1:] {
		p = strings.TrimSpace(p)
		name, rest, _ := strings.Cut(p, ":")
		name = strings.TrimSpace(name)
		if !knownFilter(name) {
			return nil, fmt.Errorf("undefined filter %q", name)
		}
		f := itemFilter{name: name}
		if strings.TrimSpace(rest) != "" {
			for _, a := range splitTopLevel(rest, ',') {
				arg, err := operandOf(exprTokens(a))
				if err != nil {
					return nil, err
				}
				f.args = append(f.args, arg)
			}
		}
		ie.filters = append(ie.filters, f)
	}
	return ie, nil
}

// eval evaluates the expression in ev.
func (ie *itemExpr) eval(ev scopeEval, st *state) (any, error) {
	var v any
	var err error
	if ie.head.op == "" {
		v, err = ie.head.value(ev, st)
	} else {
		v, err = ie.head.eval(ev, st)
	}
	if err != nil {
		return nil, err
	}
	for _, f := range ie.filters {
		args := make([]any, len(f.args))
		for i, a := range f.args {
			if args[i], err = a.value(ev, st); err != nil {
				return nil, err
			}
		}
		if v, err = st.filters[f.name](v, args...); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// expFilter returns the _exp filter name for the render whose state is st.
func expFilter(name string, st *state) jsFilter {
	return func(in any, args []any) (any, error) {
		itemName := jsString(arg(args, 0))
		ie, err := compileItemExpr(jsString(arg(args, 1)))
		if err != nil {
			return nil, err
		}
		var items []any
		if name == "group_by_exp" {
			s := enumerate(in)
			for i := range s.n {
				items = append(items, s.at(i))
			}
		} else {
			items = toArray(in)
		}
		scope := st.scope
		if scope == nil {
			scope = map[string]any{}
		}
		defer restorer(scope, itemName)()
		ev := scopeEval{bindings: scope, cfg: st.strict}
		var kept []any
		var groups []any
		keys := []any{}
		for i, item := range items {
			if _, u := item.(jsUndefined); u {
				// LiquidJS binds the name to undefined: reading it fails.
				return nil, &UndefinedError{Name: itemName}
			}
			scope[itemName] = item
			v, err := ie.eval(ev, st)
			if err != nil {
				return nil, err
			}
			switch name {
			case "where_exp", "reject_exp":
				if (v == true) == (name == "where_exp") {
					kept = append(kept, item)
				}
			case "find_exp", "find_index_exp", "has_exp":
				if jsTruthyValue(v) {
					switch name {
					case "find_exp":
						return item, nil
					case "find_index_exp":
						return i, nil
					}
					return true, nil
				}
			case "group_by_exp":
				k := -1
				for j, key := range keys {
					if sameValueZero(key, v) {
						k = j
						break
					}
				}
				if k < 0 {
					keys = append(keys, v)
					groups = append(groups, map[string]any{"name": v, "items": []any{}})
					k = len(keys) - 1
				}
				g := groups[k].(map[string]any)
				g["items"] = append(g["items"].([]any), item)
			}
		}
		switch name {
		case "where_exp", "reject_exp":
			if kept == nil {
				kept = []any{}
			}
			return kept, nil
		case "group_by_exp":
			if groups == nil {
				groups = []any{}
			}
			return groups, nil
		case "has_exp":
			return false, nil
		}
		return nil, nil
	}
}

// jsTruthyValue is JavaScript's truthiness: false, nil, 0, NaN and the
// empty string are false.
func jsTruthyValue(v any) bool {
	v = values.ToLiquid(v)
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case string:
		return v != ""
	case nullDrop:
		return false
	}
	if isNumber(v) {
		f := number(v)
		return f == f && f != 0
	}
	return true
}

// sameValueZero is the key equality of a JavaScript Map: numbers by value,
// strings, booleans and nil by value, anything else by identity (here: a
// list or map is never equal to another value).
func sameValueZero(a, b any) bool {
	a, b = values.ToLiquid(a), values.ToLiquid(b)
	if isNumber(a) || isNumber(b) {
		return isNumber(a) && isNumber(b) && number(a) == number(b)
	}
	switch a.(type) {
	case nil, bool, string:
		return a == b
	}
	return false
}
