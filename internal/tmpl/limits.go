package tmpl

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/osteele/liquid/expressions"
	"github.com/osteele/liquid/filters"
	"github.com/osteele/liquid/render"
	"github.com/osteele/liquid/values"
)

// Render bounds. osteele/liquid has no render deadline and no limits of its
// own, so every render is metered here:
//
//   - MaxOutput: the rendered text may not exceed 1 MiB;
//   - MaxIterations: all loop iterations of one render ({% for %},
//     {% tablerow %}, nested or not, empty bodies included) count against
//     one budget, checked at the start of each iteration;
//   - MaxValue: no filter may take or return a value larger than 1 MiB,
//     measured as its approximate memory (see below), so values cannot grow
//     without bound through assign, capture or filter chains
//     (`| append: s`, `| escape`, `| concat`);
//   - MaxWork: every operation of a render is charged to one work budget:
//     NodeCost for every tag, output and text node run, TickCost for
//     every loop iteration; the bytes every text, raw or output node writes (into the
//     output or into a {% capture %}); the size of every value a tag or
//     output reads through a variable, plus 64 per item of a list or map,
//     once per occurrence of the variable in its expression (what a
//     comparison, contains or case/when can touch); the size of every filter's input, arguments and output, the
//     sorting filters (sort, sort_natural) times log2 of the list's length
//     and uniq of lists holding lists or maps times their count (its
//     quadratic case). Work that is repeated by loops or hidden in captures
//     is bounded too.
//
// A value's size is its approximate memory in bytes: a string's length, 16
// per list item plus the item's size, 16 per map entry plus the sizes of
// its key and value, 8 for a number, boolean or other scalar, 24 per item
// of a range (what expanding it allocates). Sizes are measured only up to
// the budget left, so measuring is bounded by the budget too.
//
// With these bounds any template the engine accepts (see CheckSource)
// renders or fails within about a second and 64 MiB allocated on a 2-core
// machine; FuzzRenderBounded checks it.
const (
	MaxOutput     = 1 << 20
	MaxIterations = 100_000
	MaxValue      = 1 << 20
	MaxWork       = 16 << 20
	// NodeCost is the work charged for every node run; TickCost for every
	// loop iteration.
	NodeCost = 96
	TickCost = 32
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
	ctx        context.Context       // nil: no deadline
	nextPoll   int                   // work at which ctx is looked at next
	env        map[string]any        // the render's own variables (what increment starts from)
	counters   map[string]float64    // increment and decrement, by name
	cycles     map[string]int        // cycle positions, by group and candidates
	registers  map[string]int        // where offset: continue resumes, by loop variable and collection
	lenient    expressions.Config    // the instance's filters, variables not strict
	strict     expressions.Config    // the instance's filters, variables strict
	loc        *time.Location        // the date filters' time zone; nil is UTC
	undefined  bool                  // the last filter's result is LiquidJS's undefined (assignTag)
	filters    map[string]filterFunc // the instance's metered filters, by name
}

// filterFunc is a metered filter as registered with osteele/liquid.
type filterFunc = func(any, ...any) (any, error)

// pollEvery is how much work may be done between two looks at the render's
// context (besides the look at every node).
const pollEvery = 1 << 16

const stateKey = "\x00kindgi.render"

func stateOf(ctx render.Context) *state {
	st, _ := ctx.Get(stateKey).(*state)
	return st
}

// location is the render's time zone: UTC unless it names one.
func (st *state) location() *time.Location {
	if st.loc == nil {
		return time.UTC
	}
	return st.loc
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
	if err := st.charge(TickCost); err != nil {
		return err
	}
	return st.poll()
}

// node charges one node run and looks at the render's context.
func (st *state) node() error {
	if err := st.charge(NodeCost); err != nil {
		return err
	}
	return st.poll()
}

// poll fails the render when its context is done.
func (st *state) poll() error {
	if st.ctx == nil {
		return nil
	}
	select {
	case <-st.ctx.Done():
		return st.fail(st.ctx.Err())
	default:
		return nil
	}
}

func (st *state) charge(n int) error {
	st.work += n
	if st.work > MaxWork || st.work < 0 {
		return st.fail(&LimitError{Limit: "work", Max: MaxWork})
	}
	if st.work >= st.nextPoll {
		st.nextPoll = st.work + pollEvery
		return st.poll()
	}
	return nil
}

// left is the work budget left, at least 0.
func (st *state) left() int { return max(MaxWork-st.work, 0) }

// chargeValue charges the size of v and rejects a value past MaxValue.
func (st *state) chargeValue(v any) error {
	n := sizeOf(v, min(MaxValue, st.left())+1)
	if n > MaxValue {
		return st.fail(&LimitError{Limit: "value", Max: MaxValue})
	}
	return st.charge(n)
}

// chargeRefs charges, before a tag or output runs, the size of every value
// its expression reads through a variable: what a comparison, contains or
// case/when of the values can touch. A path is followed through maps as
// far as it resolves (firm.name charges the name, not the firm); past an
// index or a property of something else the whole value is charged.
func (st *state) chargeRefs(refs [][]string, scope map[string]any) error {
	for _, p := range refs {
		v, ok := scope[p[0]]
		if !ok {
			continue
		}
		for _, k := range p[1:] {
			m, ok := v.(map[string]any)
			if !ok {
				break
			}
			e, ok := m[k]
			if !ok {
				break
			}
			v = e
		}
		if err := st.charge(refCost(v, st.left()+1)); err != nil {
			return err
		}
	}
	return nil
}

// refEntryCost is what chargeRefs charges per item of a list or map a tag
// reads, besides its size: comparing two items through reflection, as a
// comparison, contains or case/when does, costs about as much as copying
// a few hundred bytes.
const refEntryCost = 64

// refCost is the size of v plus refEntryCost for each item of a list or
// map, measured up to budget.
func refCost(v any, budget int) int {
	n := sizeOf(v, budget)
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		n += rv.Len() * refEntryCost
	}
	return n
}

// Sizes of the parts of a value (see MaxValue).
const (
	entrySize  = 16
	scalarSize = 8
)

// sizeOf measures v (see MaxValue), stopping once the size passes budget.
func sizeOf(v any, budget int) int {
	switch v := v.(type) {
	case nil:
		return 0
	case string:
		return len(v)
	case []byte:
		return len(v)
	case values.Range:
		n := rangeLen(v)
		if n > budget/entrySize {
			return budget + 1
		}
		return n * (entrySize + scalarSize)
	case []any:
		n := len(v) * entrySize
		for _, e := range v {
			if n > budget {
				break
			}
			n += sizeOf(e, budget-n)
		}
		return n
	case []string:
		n := len(v) * entrySize
		for _, e := range v {
			if n > budget {
				break
			}
			n += len(e)
		}
		return n
	case map[string]any:
		n := len(v) * entrySize
		for k, e := range v {
			if n > budget {
				break
			}
			n += len(k) + sizeOf(e, budget-n)
		}
		return n
	case bool, int, int64, float64:
		return scalarSize
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		n := rv.Len() * entrySize
		for i := 0; i < rv.Len() && n <= budget; i++ {
			n += sizeOf(rv.Index(i).Interface(), budget-n)
		}
		return n
	case reflect.Map:
		n := rv.Len() * entrySize
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
	return scalarSize
}

// rangeLen is the number of integers of r. values.Range.Len computes
// end+1-begin in int, which overflows for (-9223372036854775807..
// 9223372036854775807); here the count is exact, saturated at MaxInt.
func rangeLen(r values.Range) int {
	b, e := r.Index(0).(int), rangeEnd(r)
	if e < b {
		return 0
	}
	n := uint64(e) - uint64(b) + 1
	if n == 0 || n > math.MaxInt {
		return math.MaxInt
	}
	return int(n)
}

// rangeEnd is r's last integer: Len wraps around, so begin+Len-1 wraps
// back to it.
func rangeEnd(r values.Range) int { return r.Index(0).(int) + r.Len() - 1 }

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

// goOnlyFilters are osteele/liquid filters LiquidJS does not have: a
// template using one would not render there, so it is refused here too.
var goOnlyFilters = map[string]bool{"handleize": true, "handle": true, "pluralize": true, "type": true}

var filterNames = func() map[string]struct{} {
	m := make(map[string]struct{}, len(standardFilters)+len(jsFilters)+1)
	for _, f := range standardFilters {
		if !goOnlyFilters[f.name] {
			m[f.name] = struct{}{}
		}
	}
	for name := range jsFilters {
		m[name] = struct{}{}
	}
	for _, name := range expFilterNames {
		m[name] = struct{}{}
	}
	return m
}()

// instance is one render configuration whose filters are metered by its
// own state. Instances are pooled: a render takes one, resets its state and
// gives it back, so renders run in parallel without sharing a meter.
type instance struct {
	cfg     render.Config
	st      *state
	lenient expressions.Config
	filters map[string]filterFunc
	// bindings is the map a render of this instance binds, emptied after
	// each render and kept unless it grew past maxPooledBindings.
	bindings map[string]any
}

// maxPooledBindings is the size past which a render's bindings map is not
// kept for the next one (so that one render binding many names does not
// leave a large map in the pool).
const maxPooledBindings = 64

var instances = sync.Pool{New: func() any { return newInstance() }}

func newInstance() *instance {
	in := &instance{st: &state{}, filters: map[string]filterFunc{}}
	add := func(name string, f filterFunc) {
		in.filters[name] = f
		in.cfg.AddFilter(name, f)
	}
	in.cfg = render.NewConfig()
	addTags(&in.cfg)
	in.cfg.TemplateStore = nil
	in.cfg.StrictVariables = true
	for _, f := range standardFilters {
		if goOnlyFilters[f.name] {
			continue
		}
		fn := f.fn
		call := func(in any, args []any) (any, error) {
			return values.Call(fn, append([]any{in}, args...))
		}
		add(f.name, meteredFilter(f.name, call, in.st))
	}
	for name, f := range jsFilters {
		add(name, meteredFilter(name, f, in.st))
	}
	for _, name := range expFilterNames {
		add(name, meteredFilter(name, expFilter(name, in.st), in.st))
	}
	date := standard("date")
	for name, format := range dateFormats {
		add(name, meteredFilter(name, dateFilter(date, format, in.st.location), in.st))
	}
	in.lenient = in.cfg.Config.Config
	in.lenient.StrictVariables = false
	return in
}

// meteredFilter wraps a standard filter: it charges the size of the input
// and arguments before calling it (a range is measured, not expanded),
// the extra work of the filters that do more than a pass over their input
// (filterWork), and the size of its result after. The filters whose result
// can be many times their input and arguments together (replace and
// remove, join, split, sample of a string, json with an indent) measure
// it before building it and return a *LimitError past MaxValue, which the
// wrapper keeps as the render's failure; the others' results are at most
// a small constant times their input (escape: 6, newline_to_br: 7,
// url_encode: 3), which MaxValue bounds in turn. The wrapper takes its
// arguments untyped and lets values.Call convert them for fn exactly as
// osteele/liquid would have.
func meteredFilter(name string, call jsFilter, st *state) func(any, ...any) (any, error) {
	return func(in any, args ...any) (any, error) {
		if err := st.chargeValue(in); err != nil {
			return nil, err
		}
		for _, a := range args {
			if err := st.chargeValue(a); err != nil {
				return nil, err
			}
		}
		if err := st.charge(filterWork(name, in, st.left()+1)); err != nil {
			return nil, err
		}
		// A filter reads empty and blank as their value, "" (LiquidJS's
		// toValue), except json, which prints the drop as the object it
		// is ({}), and truncate, which returns a short input as it came.
		if _, drop := in.(emptyDrop); drop && name != "json" && name != "jsonify" && name != "truncate" {
			in = ""
		}
		for i, a := range args {
			if _, drop := a.(emptyDrop); drop {
				args[i] = ""
			}
		}
		if !keepsUndefined[name] {
			in = withoutUndefined(in)
		}
		if st.undefined && in == nil {
			switch name {
			case "json", "jsonify":
				// JSON.stringify(undefined) is undefined: it prints
				// nothing, and a variable assigned it is undefined.
				return nil, nil
			case "to_integer":
				return math.NaN(), nil // Number(undefined)
			case "truncate":
				// A string short enough is returned as it came: so is
				// undefined, which stays undefined.
				return nil, nil
			}
		}
		out, err := call(in, args)
		st.undefined = out == nil && err == nil && undefinedResults[name] && yieldsUndefined(name, in)
		if _, u := out.(jsUndefined); u {
			// first or last of a list whose item is undefined
			out, st.undefined = nil, true
		}
		if err != nil {
			var ue *UndefinedError
			if errors.As(err, &ue) {
				// Kept as the render's error: osteele/liquid reports a
				// filter's error as text.
				return nil, st.fail(ue)
			}
			var le *LimitError
			if errors.As(err, &le) {
				return nil, st.fail(le)
			}
			return nil, err
		}
		if err := st.chargeValue(out); err != nil {
			return nil, err
		}
		return out, nil
	}
}

// yieldsUndefined reports whether a nil result of filter name (one of
// undefinedResults) on in is LiquidJS's undefined: first and last yield it
// for an empty list only, the find filters whenever nothing matched.
func yieldsUndefined(name string, in any) bool {
	if name != "first" && name != "last" {
		return true
	}
	items, ok := listOf(values.ToLiquid(in))
	return ok && len(items) == 0
}

// filterWork is the work of a filter beyond one pass over its input: a
// sort compares about n·log2(n) pairs, so it is charged the input's size
// times log2(n); uniq compares each list or map item with every item kept
// (its other items are hashed into a set, 32 per item), so it is charged
// the input's size for each such item.
func filterWork(name string, in any, budget int) int {
	rv := reflect.ValueOf(in)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return 0
	}
	n := rv.Len()
	switch name {
	case "sort", "sort_natural":
		return sizeOf(in, budget) * bits.Len(uint(n))
	case "uniq":
		k := 0
		for i := range n {
			switch reflect.ValueOf(rv.Index(i).Interface()).Kind() {
			case reflect.Slice, reflect.Array, reflect.Map:
				k++
			}
		}
		set := n * 2 * entrySize
		if k == 0 {
			return set
		}
		size := sizeOf(in, budget) + n
		if size > budget/k {
			return budget + 1
		}
		return size*k + set
	}
	return 0
}
