package tmpl

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/osteele/liquid/filters"
	"github.com/osteele/liquid/render"
	"github.com/osteele/liquid/tags"
	"github.com/osteele/liquid/values"
)

// Render bounds. osteele/liquid has no render deadline and no limits of its
// own, so every render is metered here:
//
//   - MaxOutput: the rendered text may not exceed 1 MiB;
//   - MaxIterations: all loop iterations of one render ({% for %},
//     {% tablerow %}, nested or not, empty bodies included) count against
//     one budget, checked at the start of each iteration;
//   - MaxValue: no filter may take or return a value larger than 1 MiB
//     (a string's bytes; a list's or map's entries plus the size of their
//     items; a range's length), so values cannot grow without bound through
//     assign, capture or filter chains (`| append: s`, `| escape`, `| concat`);
//   - MaxWork: every byte a text, raw or output node writes (into the
//     output or into a {% capture %}) and the size of every filter's input
//     and output is charged to one work budget, so work that is repeated by
//     loops or hidden in captures is bounded too.
const (
	MaxOutput     = 1 << 20
	MaxIterations = 100_000
	MaxValue      = 1 << 20
	MaxWork       = 16 << 20
)

// LimitError reports a render stopped by one of the bounds.
type LimitError struct {
	// Limit names the bound: "output", "iterations", "value" or "work".
	Limit string
	// Max is the bound's value.
	Max int
}

// Error implements the error interface.
func (e *LimitError) Error() string {
	switch e.Limit {
	case "output":
		return fmt.Sprintf("rendered text exceeds %d bytes", e.Max)
	case "iterations":
		return fmt.Sprintf("loops exceed %d iterations", e.Max)
	case "value":
		return fmt.Sprintf("a value exceeds %d bytes or items", e.Max)
	}
	return fmt.Sprintf("rendering exceeds its work budget of %d units", e.Max)
}

// state is the per-render meter. Probe nodes find it in the bindings under
// stateKey (a name no Liquid expression can spell); the filter wrappers of
// the instance running the render hold it directly.
type state struct {
	t          *Template
	iterations int
	work       int
	failure    error // the first limit hit; it wins over the error that unwinds the render
	current    int   // index of the tag node being rendered, in t.infos; -1 none
	scope      map[string]any
}

const stateKey = "\x00kindgi.render"

func stateOf(ctx render.Context) *state {
	st, _ := ctx.Get(stateKey).(*state)
	return st
}

func (st *state) fail(err error) error {
	if st.failure == nil {
		st.failure = err
	}
	return err
}

func (st *state) tick() error {
	st.iterations++
	if st.iterations > MaxIterations {
		return st.fail(&LimitError{Limit: "iterations", Max: MaxIterations})
	}
	return nil
}

func (st *state) charge(n int) error {
	st.work += n
	if st.work > MaxWork {
		return st.fail(&LimitError{Limit: "work", Max: MaxWork})
	}
	return nil
}

// chargeValue charges the size of v and rejects a value past MaxValue.
func (st *state) chargeValue(v any) error {
	n := sizeOf(v, MaxValue+1)
	if n > MaxValue {
		return st.fail(&LimitError{Limit: "value", Max: MaxValue})
	}
	return st.charge(n)
}

// sizeOf measures v, stopping once the size passes budget: the bytes of a
// string, and for lists and maps one unit per entry plus the size of keys
// and items. Other scalars count 1.
func sizeOf(v any, budget int) int {
	switch v := v.(type) {
	case nil:
		return 0
	case string:
		return len(v)
	case []byte:
		return len(v)
	case values.Range:
		return max(v.Len(), 0)
	case []any:
		n := len(v)
		for _, e := range v {
			if n > budget {
				break
			}
			n += sizeOf(e, budget-n)
		}
		return n
	case map[string]any:
		n := len(v)
		for k, e := range v {
			if n > budget {
				break
			}
			n += len(k) + sizeOf(e, budget-n)
		}
		return n
	case bool, int, int64, float64:
		return 1
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		n := rv.Len()
		for i := 0; i < rv.Len() && n <= budget; i++ {
			n += sizeOf(rv.Index(i).Interface(), budget-n)
		}
		return n
	case reflect.Map:
		n := rv.Len()
		it := rv.MapRange()
		for n <= budget && it.Next() {
			n += sizeOf(it.Key().Interface(), budget-n) + sizeOf(it.Value().Interface(), budget-n)
		}
		return n
	case reflect.String:
		return rv.Len()
	case reflect.Pointer:
		if rv.IsNil() {
			return 0
		}
		return sizeOf(rv.Elem().Interface(), budget)
	}
	return 1
}

// cappedWriter collects the rendered text and fails past MaxOutput.
type cappedWriter struct {
	st *state
	b  strings.Builder
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	if w.b.Len()+len(p) > MaxOutput {
		return 0, w.st.fail(&LimitError{Limit: "output", Max: MaxOutput})
	}
	return w.b.Write(p)
}

func (w *cappedWriter) WriteString(s string) (int, error) {
	if w.b.Len()+len(s) > MaxOutput {
		return 0, w.st.fail(&LimitError{Limit: "output", Max: MaxOutput})
	}
	return w.b.WriteString(s)
}

// filterRecorder collects the standard filters so that each instance can
// register metered wrappers of them.
type filterRecorder []struct {
	name string
	fn   reflect.Value
}

func (r *filterRecorder) AddFilter(name string, fn any) {
	*r = append(*r, struct {
		name string
		fn   reflect.Value
	}{name, reflect.ValueOf(fn)})
}

// standardFilters are osteele/liquid's standard filters, recorded once.
var standardFilters = func() filterRecorder {
	var r filterRecorder
	filters.AddStandardFilters(&r)
	return r
}()

// knownFilter reports whether name is a filter templates may use.
func knownFilter(name string) bool {
	_, ok := filterNames[name]
	return ok
}

var filterNames = func() map[string]struct{} {
	m := make(map[string]struct{}, len(standardFilters))
	for _, f := range standardFilters {
		m[f.name] = struct{}{}
	}
	return m
}()

// instance is one render configuration whose filters are metered by its
// own state. Instances are pooled: a render takes one, resets its state and
// gives it back, so renders run in parallel without sharing a meter.
type instance struct {
	cfg render.Config
	st  *state
}

var instances = sync.Pool{New: func() any { return newInstance() }}

func newInstance() *instance {
	in := &instance{st: &state{}}
	in.cfg = render.NewConfig()
	tags.AddStandardTags(&in.cfg)
	for _, name := range removedTags {
		in.cfg.UnregisterTag(name)
	}
	in.cfg.TemplateStore = nil
	in.cfg.StrictVariables = true
	for _, f := range standardFilters {
		in.cfg.AddFilter(f.name, meteredFilter(f.fn, in.st))
	}
	return in
}

// meteredFilter wraps a standard filter: it charges the size of the input
// and arguments before calling it (a range is measured, not expanded) and
// of its result after. The wrapper takes its arguments untyped and lets
// values.Call convert them for fn exactly as osteele/liquid would have.
func meteredFilter(fn reflect.Value, st *state) func(any, ...any) (any, error) {
	return func(in any, args ...any) (any, error) {
		if err := st.chargeValue(in); err != nil {
			return nil, err
		}
		for _, a := range args {
			if err := st.chargeValue(a); err != nil {
				return nil, err
			}
		}
		all := make([]any, 0, 1+len(args))
		all = append(all, in)
		all = append(all, args...)
		out, err := values.Call(fn, all)
		if err != nil {
			return nil, err
		}
		if err := st.chargeValue(out); err != nil {
			return nil, err
		}
		return out, nil
	}
}
