package tmpl

import (
	"strings"

	"github.com/osteele/liquid/expressions"
	"github.com/osteele/liquid/render"
	"github.com/osteele/liquid/values"
)

// A pipeline is an output's expression compiled as its receiver and its
// filters, so that renderOutput calls the filters' metered wrappers
// directly instead of through osteele/liquid's ApplyFilter, which calls
// every filter by reflection (values.Call: about 7,000 instructions and
// five allocations a call, most of a 2 KB template's render). Only the
// common shape is compiled: a receiver and arguments that are each a
// variable path or a string or number literal, without keyword arguments;
// any other output is evaluated by osteele/liquid whole. The pipeline
// does what osteele/liquid's evaluation does, in its order (the receiver,
// then each filter's arguments, then the filter), with the same values
// (each result passed on as values.ValueOf(result).Interface(), a []byte
// result as a string) and the same errors (a filter's error as an
// expressions.FilterError, its argument count without the receiver, a
// values.TypeError or InterpreterError panic recovered as the error):
// TestPipelineMatchesTheEngine compares the two.
type pipeline struct {
	recv    pipeArg
	filters []pipeFilter
}

type pipeFilter struct {
	name string
	args []pipeArg
}

// pipeArg is a filter argument: a constant (a literal, evaluated once)
// or an expression evaluated at each render.
type pipeArg struct {
	expr  expressions.Expression
	value any
}

// compilePipeline returns the pipeline of an output expression, or nil
// when it is not of the compiled shape (or has no filter).
func compilePipeline(src string) *pipeline {
	segs, ok := splitTop(src, '|')
	if !ok || len(segs) < 2 {
		return nil
	}
	recv, ok := operand(segs[0])
	if !ok {
		return nil
	}
	p := &pipeline{recv: recv}
	for _, seg := range segs[1:] {
		name, rest, hasArgs := strings.Cut(strings.TrimSpace(seg), ":")
		name = strings.TrimSpace(name)
		if !isPathSegment(name) || strings.HasSuffix(name, "?") {
			return nil
		}
		f := pipeFilter{name: name}
		if hasArgs {
			parts, ok := splitTop(rest, ',')
			if !ok {
				return nil
			}
			for _, part := range parts {
				a, ok := operand(part)
				if !ok {
					return nil
				}
				f.args = append(f.args, a)
			}
		}
		p.filters = append(p.filters, f)
	}
	return p
}

// splitTop splits s at each sep outside quoted strings. It fails on an
// unterminated quote.
func splitTop(s string, sep byte) ([]string, bool) {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, false
			}
			i += j + 1
		case sep:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:]), true
}

// operand compiles a receiver or an argument: a quoted string or a number
// (a constant, as osteele/liquid evaluates it), or a variable path of
// names and ".name" properties (an expression). Anything else fails.
func operand(s string) (pipeArg, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return pipeArg{}, false
	}
	switch {
	case s[0] == '"' || s[0] == '\'':
		if len(s) < 2 || s[len(s)-1] != s[0] || strings.IndexByte(s[1:len(s)-1], s[0]) >= 0 {
			return pipeArg{}, false
		}
		return constant(s)
	case s[0] >= '0' && s[0] <= '9' || s[0] == '-':
		if !isNumberLiteral(s) {
			return pipeArg{}, false
		}
		return constant(s)
	}
	for _, seg := range strings.Split(s, ".") {
		if !isPathSegment(seg) {
			return pipeArg{}, false
		}
	}
	expr, err := expressions.Parse(s)
	if err != nil {
		return pipeArg{}, false
	}
	return pipeArg{expr: expr}, true
}

// constant evaluates a literal once, as osteele/liquid would.
func constant(s string) (pipeArg, bool) {
	expr, err := expressions.Parse(s)
	if err != nil {
		return pipeArg{}, false
	}
	v, err := expr.Evaluate(expressions.NewContext(nil, expressions.NewConfig()))
	if err != nil {
		return pipeArg{}, false
	}
	return pipeArg{value: v}, true
}

// isNumberLiteral reports -?digits(.digits)?.
func isNumberLiteral(s string) bool {
	s = strings.TrimPrefix(s, "-")
	intPart, frac, hasFrac := strings.Cut(s, ".")
	return allDigits(intPart) && (!hasFrac || allDigits(frac))
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isPathSegment reports an identifier of the expression language: a
// letter or underscore, then letters, digits, "_" and "-", optionally
// ending in "?"; not one of its keywords.
func isPathSegment(s string) bool {
	s = strings.TrimSuffix(s, "?")
	if s == "" || !isIdentStart(s[0]) || exprKeywords[s] {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isWordByte(s[i]) && s[i] != '-' {
			return false
		}
	}
	return true
}

// eval evaluates the pipeline in ctx: what ctx.Evaluate of the whole
// expression returns.
func (p *pipeline) eval(ctx render.Context, st *state) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			// What expressions.expression.Evaluate recovers as an error;
			// anything else goes on up, as it would from there.
			switch e := r.(type) {
			case values.TypeError:
				err = e
			case expressions.InterpreterError:
				err = e
			case expressions.UndefinedFilter:
				err = e
			case expressions.FilterError:
				err = e
			default:
				panic(r)
			}
		}
	}()
	v, err := p.recv.eval(ctx)
	if err != nil {
		return nil, err
	}
	for _, f := range p.filters {
		args := make([]any, 0, len(f.args))
		for _, a := range f.args {
			av, err := a.eval(ctx)
			if err != nil {
				return nil, err
			}
			args = append(args, av)
		}
		call := st.filters[f.name]
		if call == nil {
			return nil, expressions.UndefinedFilter(f.name)
		}
		res, err := call(v, args...)
		if err != nil {
			if e, ok := err.(*values.CallParityError); ok {
				// As ApplyFilter counts them: without the receiver.
				err = &values.CallParityError{NumArgs: e.NumArgs - 1, NumParams: e.NumParams - 1}
			}
			return nil, expressions.FilterError{FilterName: f.name, Err: err}
		}
		if b, ok := res.([]byte); ok {
			res = string(b)
		}
		v = liquidInterface(res)
	}
	return v, nil
}

// eval returns the argument's value.
func (a pipeArg) eval(ctx render.Context) (any, error) {
	if a.expr == nil {
		return a.value, nil
	}
	return ctx.Evaluate(a.expr)
}

// liquidInterface is values.ValueOf(v).Interface(), without its wrapper
// for the types it returns unchanged.
func liquidInterface(v any) any {
	switch v.(type) {
	case nil, string, int, float64, bool:
		return v
	}
	return values.ValueOf(v).Interface()
}
