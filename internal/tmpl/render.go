package tmpl

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/osteele/liquid/render"
)

// Render renders t with vars, within the bounds of this package (MaxOutput,
// MaxIterations, MaxValue, MaxWork). vars is not modified.
//
// The error is an *UndefinedError when the template reads a variable (or a
// property of a map) that nothing binds, a *LimitError when a bound was hit,
// and otherwise the engine's error (a type error, a bad filter argument, …).
func (t *Template) Render(vars map[string]any) (out string, err error) {
	return t.RenderContext(nil, vars)
}

// RenderContext is Render that also stops when ctx is done: at the next
// node, loop iteration or filter, or after at most 64 Ki units of work
// (see MaxWork), whichever comes first. The error is then ctx.Err(). A nil
// ctx never stops the render.
func (t *Template) RenderContext(ctx context.Context, vars map[string]any) (out string, err error) {
	return t.RenderIn(ctx, vars, nil)
}

// RenderIn is RenderContext with the date filters' time zone: loc, or UTC
// when loc is nil. A date with an offset is shown in loc (so the offset
// and daylight saving time of loc at that instant apply); a date without
// one is a wall time in loc. This is LiquidJS run in a process whose time
// zone is loc.
func (t *Template) RenderIn(ctx context.Context, vars map[string]any, loc *time.Location) (out string, err error) {
	if ctx != nil {
		if err := ctx.Err(); err != nil {
			return "", err
		}
	}
	if t.plain {
		return t.text, nil
	}
	in := instances.Get().(*instance)
	st := in.st
	*st = state{t: t, current: -1, ctx: ctx, nextPoll: pollEvery, env: vars, lenient: in.lenient, strict: in.cfg.Config.Config, loc: loc, filters: in.filters}
	bindings := in.bindings
	in.bindings = nil
	if bindings == nil {
		bindings = make(map[string]any, len(vars)+len(literalBindings)+1)
	}
	defer func() {
		*st = state{}
		if len(bindings) <= maxPooledBindings {
			clear(bindings)
			in.bindings = bindings
		}
		instances.Put(in)
	}()

	for k, v := range vars {
		bindings[k] = integral(v)
	}
	maps.Copy(bindings, literalBindings)
	bindings[stateKey] = st
	w := &cappedWriter{st: st}
	// The text is built in one allocation of about its size: the size of
	// the template's last render (else of its source).
	w.b.Grow(min(int(t.outHint.Load()), MaxOutput))
	defer func() { t.outHint.Store(int64(w.b.Len())) }()

	defer func() {
		if r := recover(); r != nil {
			if st.failure != nil {
				out, err = "", st.failure
				return
			}
			out, err = "", &PanicError{Message: panicMessage(r)}
		}
	}()
	if rerr := render.Render(t.root, w, bindings, in.cfg); rerr != nil {
		// A break or continue outside a loop stops the render, as in
		// LiquidJS: what was written stays.
		if brk, cont := loopSignal(rerr); (brk || cont) && st.failure == nil {
			return w.b.String(), nil
		}
		return "", classify(rerr, st)
	}
	return w.b.String(), nil
}

// classify picks the error a failed render reports: the first bound hit,
// else the undefined variable, else the engine's error.
func classify(err error, st *state) error {
	if st.failure != nil {
		return st.failure
	}
	var ue *UndefinedError
	if errors.As(err, &ue) {
		return ue
	}
	if isUndefined(err) {
		return &UndefinedError{Name: st.undefinedName()}
	}
	return err
}

// undefinedName names the variable osteele/liquid found undefined. Its
// error does not say, so the paths of the site that was running (the last
// mark) are resolved against the live scope; if they all resolve (a later
// {% when %} of a case whose earlier branch rendered), the paths of every
// site of the template are tried.
func (st *state) undefinedName() string {
	if st.scope == nil {
		return "unknown"
	}
	if st.current >= 0 {
		if name := missingName(st.t.infos[st.current].vars, st.scope); name != "" {
			return name
		}
	}
	for _, info := range st.t.infos {
		if name := missingName(info.vars, st.scope); name != "" {
			return name
		}
	}
	return "unknown"
}

// PanicError reports a panic of the engine that a render recovered from.
// Its message is the panic's value alone: never a stack trace, which would
// end up in an error message or a journal.
type PanicError struct {
	Message string
}

// Error implements the error interface.
func (e *PanicError) Error() string { return "template engine failed: " + e.Message }

// panicMessage returns the text of a recovered panic value without the
// stack trace osteele/liquid attaches to an error it re-panics with (its
// rethrownError prints "cause\nOriginal stacktrace:\n…"): the cause's
// message when the value has one, else its first line.
func panicMessage(r any) string {
	var msg string
	switch v := r.(type) {
	case interface{ Cause() error }:
		if c := v.Cause(); c != nil {
			msg = c.Error()
		}
	case error:
		msg = v.Error()
	default:
		msg = fmt.Sprint(v)
	}
	if i := strings.Index(msg, "\nOriginal stacktrace:"); i >= 0 {
		msg = msg[:i]
	}
	if i := strings.Index(msg, "\ngoroutine "); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimSpace(msg)
}

// integral returns v with every float64 that holds an integer (a JSON
// number such as 7) as an int, copying only the lists and maps that change:
// osteele/liquid takes only ints for range bounds and integer arguments
// (`(1..n)`, `truncate: n`), and LiquidJS has one number type.
func integral(v any) any {
	out, _ := integralChanged(v)
	return out
}

// integralChanged is integral that also reports whether v changed.
func integralChanged(v any) (any, bool) {
	if x, ok := v.(float64); ok && x == math.Trunc(x) && math.Abs(x) < 1<<53 {
		return int(x), true
	}
	return rewriteItems(v, integralChanged)
}

// rewriteItems is rewriteList or rewriteMap when v is a list or a map; any
// other v is left as it is.
func rewriteItems(v any, f func(any) (any, bool)) (any, bool) {
	switch x := v.(type) {
	case []any:
		if out, changed := rewriteList(x, f); changed {
			return out, true
		}
	case map[string]any:
		if out, changed := rewriteMap(x, f); changed {
			return out, true
		}
	}
	return v, false
}

// rewriteList returns list with every item f changes replaced by f's
// value, copying list at the first change; unchanged, it returns list
// itself and false.
func rewriteList(list []any, f func(any) (any, bool)) ([]any, bool) {
	var out []any
	for i, e := range list {
		if n, changed := f(e); changed {
			if out == nil {
				out = slices.Clone(list)
			}
			out[i] = n
		}
	}
	if out == nil {
		return list, false
	}
	return out, true
}

// rewriteMap is rewriteList for a map's values.
func rewriteMap(m map[string]any, f func(any) (any, bool)) (map[string]any, bool) {
	var out map[string]any
	for k, e := range m {
		if n, changed := f(e); changed {
			if out == nil {
				out = maps.Clone(m)
			}
			out[k] = n
		}
	}
	if out == nil {
		return m, false
	}
	return out, true
}
