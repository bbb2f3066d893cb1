package tmpl

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

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
	if ctx != nil {
		if err := ctx.Err(); err != nil {
			return "", err
		}
	}
	in := instances.Get().(*instance)
	st := in.st
	*st = state{t: t, current: -1, ctx: ctx, nextPoll: pollEvery}
	defer func() {
		*st = state{}
		instances.Put(in)
	}()

	bindings := make(map[string]any, len(vars)+1)
	maps.Copy(bindings, vars)
	bindings[stateKey] = st
	w := &cappedWriter{st: st}

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
