package tmpl

import (
	"errors"
	"fmt"
	"maps"

	"github.com/osteele/liquid/render"
)

// Render renders t with vars, within the bounds of this package (MaxOutput,
// MaxIterations, MaxValue, MaxWork). vars is not modified.
//
// The error is an *UndefinedError when the template reads a variable (or a
// property of a map) that nothing binds, a *LimitError when a bound was hit,
// and otherwise the engine's error (a type error, a bad filter argument, …).
func (t *Template) Render(vars map[string]any) (out string, err error) {
	in := instances.Get().(*instance)
	st := in.st
	*st = state{t: t, current: -1}
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
			out, err = "", fmt.Errorf("template panicked: %v", r)
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
