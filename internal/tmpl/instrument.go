package tmpl

import (
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/osteele/liquid/expressions"
	"github.com/osteele/liquid/parser"
	"github.com/osteele/liquid/render"
	"github.com/osteele/liquid/values"
)

// nodeInfo describes one instrumented site of a template.
type nodeInfo struct {
	// vars are the variable paths the site reads, in source order.
	vars [][]string
	// refs are the paths of every occurrence of a variable in the site's
	// expressions (duplicates included): what the work meter charges.
	refs [][]string
	// expr is the compiled expression of an output site, pipe the same
	// compiled as its receiver and filters when it has that shape.
	expr expressions.Expression
	pipe *pipeline
	// text is what a text or raw site writes.
	text string
	// block renders a block site in place of osteele/liquid's renderer
	// (probeBlock).
	block func(io.Writer, render.Context) error
	// run are the text and output sites a run site renders one after
	// another (probeRun).
	run []runItem
}

// runItem is one site of a run: its index and its probe, the location its
// errors are reported at (as osteele/liquid reports a tag's).
type runItem struct {
	site  int
	out   bool // an output site; else text
	probe *render.TagNode
}

// Probe tags. They are registered only in probeConfig, never in the
// configuration templates are parsed with, so a template cannot call them;
// their TagNodes are spliced into a parsed template's tree.
const (
	probeMark  = "kindgi_mark"  // before a tag or block: remember which site runs
	probeTick  = "kindgi_tick"  // first node of a loop body: count an iteration
	probeOut   = "kindgi_out"   // replaces {{ … }}: evaluate, name misses, meter
	probeText  = "kindgi_text"  // replaces text and raw: meter and write
	probeBlock = "kindgi_block" // replaces a block whose renderer is ours
	probeRun   = "kindgi_run"   // replaces consecutive text and output probes
)

var probeConfig = func() *render.Config {
	cfg := render.NewConfig()
	cfg.AddTag(probeMark, func(string) (func(io.Writer, render.Context) error, error) {
		return func(_ io.Writer, ctx render.Context) error {
			st := stateOf(ctx)
			idx := siteOf(ctx)
			st.current = idx
			st.scope = ctx.Bindings()
			st.undefined = false
			if err := st.node(); err != nil {
				return err
			}
			if err := st.chargeRefs(st.t.infos[idx].refs, st.scope); err != nil {
				return err
			}
			return nil
		}, nil
	})
	cfg.AddTag(probeTick, func(string) (func(io.Writer, render.Context) error, error) {
		return func(_ io.Writer, ctx render.Context) error {
			return stateOf(ctx).tick()
		}, nil
	})
	cfg.AddTag(probeOut, func(string) (func(io.Writer, render.Context) error, error) {
		return func(w io.Writer, ctx render.Context) error {
			return renderOutput(w, ctx, stateOf(ctx), siteOf(ctx))
		}, nil
	})
	cfg.AddTag(probeBlock, func(string) (func(io.Writer, render.Context) error, error) {
		return func(w io.Writer, ctx render.Context) error {
			return stateOf(ctx).t.infos[siteOf(ctx)].block(w, ctx)
		}, nil
	})
	cfg.AddTag(probeText, func(string) (func(io.Writer, render.Context) error, error) {
		return func(w io.Writer, ctx render.Context) error {
			st := stateOf(ctx)
			return renderText(w, st, st.t.infos[siteOf(ctx)].text)
		}, nil
	})
	cfg.AddTag(probeRun, func(string) (func(io.Writer, render.Context) error, error) {
		return func(w io.Writer, ctx render.Context) error {
			st := stateOf(ctx)
			for _, it := range st.t.infos[siteOf(ctx)].run {
				var err error
				if it.out {
					err = renderOutput(w, ctx, st, it.site)
				} else {
					err = renderText(w, st, st.t.infos[it.site].text)
				}
				if err != nil {
					// What osteele/liquid's TagNode.render makes of the
					// error of the site's own probe; the run's probe
					// has no location, so it keeps this one.
					return parser.WrapError(err, it.probe)
				}
			}
			return nil
		}, nil
	})
	return &cfg
}()

// renderText renders a text site: one node, metered, then written.
func renderText(w io.Writer, st *state, s string) error {
	if err := st.node(); err != nil {
		return err
	}
	if err := st.charge(len(s)); err != nil {
		return err
	}
	_, err := io.WriteString(w, s)
	return err
}

// probes are the probe tags compiled once; probe copies them.
var probes = func() map[string]render.TagNode {
	m := map[string]render.TagNode{}
	for _, name := range []string{probeMark, probeTick, probeOut, probeText, probeBlock, probeRun} {
		root, err := probeConfig.Compile("{% "+name+" %}", parser.SourceLoc{})
		if err != nil {
			panic(fmt.Sprintf("tmpl: probe %s: %v", name, err))
		}
		m[name] = *root.(*render.SeqNode).Children[0].(*render.TagNode)
	}
	return m
}()

// siteOf returns the index of the site a probe stands for: its arguments.
func siteOf(ctx render.Context) int {
	idx, _ := strconv.Atoi(ctx.TagArgs())
	return idx
}

// probe returns a probe tag for site idx carrying tok's source and
// location (so errors point at the template's own text) and the site's
// index as its arguments.
func probe(name string, idx int, tok parser.Token) *render.TagNode {
	n := probes[name]
	n.Token = tok
	n.Args = strconv.Itoa(idx)
	return &n
}

// instrument rewrites the children of a parsed tree in place: outputs and
// text become metered probe nodes, each tag and block is preceded by a mark,
// and each loop body starts with a tick. Consecutive text and output
// probes are rendered by one run probe (each of them metered as before:
// the run saves osteele/liquid's per-tag dispatch, not a probe's checks).
// It also collects the filters the template names and reports an unknown
// one.
func (t *Template) instrument(nodes []render.Node) ([]render.Node, error) {
	var r runner
	out, err := t.instrumentRuns(nodes, &r)
	if err != nil {
		return nil, err
	}
	return r.flush(t, out), nil
}

// runner collects consecutive text and output probes.
type runner struct {
	items []runItem
}

// add appends the probe of a text or output site to the pending run.
func (r *runner) add(site int, out bool, p *render.TagNode) {
	r.items = append(r.items, runItem{site: site, out: out, probe: p})
}

// flush appends the pending probes to out: the probe itself when it is
// alone, else one run probe for all of them.
func (r *runner) flush(t *Template, out []render.Node) []render.Node {
	switch len(r.items) {
	case 0:
		return out
	case 1:
		out = append(out, r.items[0].probe)
	default:
		idx := t.add(nodeInfo{run: slices.Clone(r.items)})
		out = append(out, probe(probeRun, idx, parser.Token{}))
	}
	r.items = r.items[:0]
	return out
}

// addOutput compiles the output expression args of the markup at loc
// ({{ args }} or {% echo args %}) into a site of t and adds its probe to r.
func (t *Template) addOutput(r *runner, args string, loc parser.Locatable, tok parser.Token) error {
	expr, err := expressions.Parse(args)
	if err != nil {
		return parser.WrapError(err, loc)
	}
	vars, refs, fs := scanExpr(args)
	if err := checkRefs(vars, fs, loc); err != nil {
		return err
	}
	idx := t.add(nodeInfo{vars: vars, refs: refs, expr: expr, pipe: compilePipeline(args)})
	r.add(idx, true, probe(probeOut, idx, tok))
	return nil
}

func (t *Template) instrumentRuns(nodes []render.Node, r *runner) ([]render.Node, error) {
	out := make([]render.Node, 0, len(nodes)+len(nodes)/2)
	for _, n := range nodes {
		switch n.(type) {
		case *render.TextNode, *render.RawNode, *render.ObjectNode:
		default:
			if tn, ok := n.(*render.TagNode); !ok || tn.Name != "echo" {
				out = r.flush(t, out)
			}
		}
		switch n := n.(type) {
		case *render.TextNode:
			idx := t.add(nodeInfo{text: n.Source})
			r.add(idx, false, probe(probeText, idx, n.Token))
		case *render.RawNode:
			// A raw node's text is unexported; render it once to read it.
			var b strings.Builder
			if err := render.Render(n, &b, nil, *config); err != nil {
				return nil, err
			}
			idx := t.add(nodeInfo{text: b.String()})
			r.add(idx, false, probe(probeText, idx, parser.Token{Source: "{% raw %}"}))
		case *render.ObjectNode:
			if err := t.addOutput(r, n.Args, n, n.Token); err != nil {
				return nil, err
			}
		case *render.TagNode:
			if n.Name == "echo" {
				// {% echo x | f %} is {{ x | f }}.
				if strings.TrimSpace(n.Args) == "" {
					continue
				}
				if err := t.addOutput(r, n.Args, n, n.Token); err != nil {
					return nil, err
				}
				continue
			}
			vars, refs, fs := tagScan(n.Name, n.Args)
			if err := checkRefs(vars, fs, n); err != nil {
				return nil, err
			}
			idx := t.add(nodeInfo{vars: vars, refs: refs})
			out = append(out, probe(probeMark, idx, n.Token), n)
		case *render.BlockNode:
			vars, refs, fs := tagScan(n.Name, n.Args)
			if err := checkRefs(vars, fs, n); err != nil {
				return nil, err
			}
			for _, c := range n.Clauses {
				cv, cr, cf := tagScan(c.Name, c.Args)
				if err := checkRefs(cv, cf, c); err != nil {
					return nil, err
				}
				vars = appendNew(vars, cv...)
				refs = append(refs, cr...)
			}
			if n.Name == "tablerow" {
				if err := refuseLoopSignal(n.Body); err != nil {
					return nil, parser.WrapError(err, n)
				}
			}
			body, err := t.instrument(n.Body)
			if err != nil {
				return nil, err
			}
			if n.Name == "for" || n.Name == "tablerow" {
				body = append([]render.Node{probe(probeTick, 0, n.Token)}, body...)
			}
			n.Body = replaceBody(n.Body, body)
			for _, c := range n.Clauses {
				cb, err := t.instrument(c.Body)
				if err != nil {
					return nil, err
				}
				c.Body = replaceBody(c.Body, cb)
			}
			idx := t.add(nodeInfo{vars: vars, refs: refs})
			out = append(out, probe(probeMark, idx, n.Token))
			if compile, ok := blockRenderers[n.Name]; ok {
				r, err := compile(n)
				if err != nil {
					return nil, parser.WrapError(err, n)
				}
				out = append(out, probe(probeBlock, t.add(nodeInfo{block: r}), n.Token))
				continue
			}
			out = append(out, n)
		case *render.SeqNode:
			children, err := t.instrument(n.Children)
			if err != nil {
				return nil, err
			}
			out = append(out, &render.SeqNode{Children: children})
		default: // trim markers
			out = append(out, n)
		}
	}
	return out, nil
}

// replaceBody returns body, the instrumented nodes, as the body of a block
// whose compiled body was old. Tag compilers keep a copy of the block they
// compiled (if and unless render their first branch from it), and that copy
// shares old's array: so the instrumented nodes are written into that
// array, as one sequence in its first element, the other elements emptied.
// Only an empty old body, which no copy can render, is replaced.
func replaceBody(old, body []render.Node) []render.Node {
	if len(old) == 0 {
		return body
	}
	old[0] = &render.SeqNode{Children: body}
	for i := 1; i < len(old); i++ {
		old[i] = &render.SeqNode{}
	}
	return old
}

// blockRenderers are the blocks rendered by this package's renderers in
// place of osteele/liquid's: LiquidJS's case (every matching when), if and
// unless (cond.go), for and tablerow (loops.go).
var blockRenderers = map[string]func(*render.BlockNode) (func(io.Writer, render.Context) error, error){
	"case": caseTag, "if": ifTag, "unless": ifTag, "for": forTag, "tablerow": tablerowTag,
}

func (t *Template) add(info nodeInfo) int {
	t.infos = append(t.infos, info)
	return len(t.infos) - 1
}

func appendNew(list [][]string, paths ...[]string) [][]string {
outer:
	for _, p := range paths {
		for _, q := range list {
			if strings.Join(p, ".") == strings.Join(q, ".") {
				continue outer
			}
		}
		list = append(list, p)
	}
	return list
}

// checkRefs rejects a template that uses an unsupported literal or an
// unknown filter.
func checkRefs(vars [][]string, filters []string, loc parser.Locatable) error {
	for _, p := range vars {
		if hint, ok := unsupportedLiterals[p[0]]; ok {
			return parser.Errorf(loc, "%q is not supported by this engine: %s", p[0], hint)
		}
	}
	return checkFilters(filters, loc)
}

func checkFilters(names []string, loc parser.Locatable) error {
	for _, name := range names {
		if !knownFilter(name) {
			return parser.Errorf(loc, "undefined filter %q", name)
		}
	}
	return nil
}

// renderOutput renders the output site idx: it evaluates the expression,
// turns an undefined variable or a missing property into an
// *UndefinedError naming it, meters the text and writes it.
func renderOutput(w io.Writer, ctx render.Context, st *state, idx int) error {
	info := &st.t.infos[idx]
	st.current = idx
	st.scope = ctx.Bindings()
	st.undefined = false
	if err := st.node(); err != nil {
		return err
	}
	if err := st.chargeRefs(info.refs, st.scope); err != nil {
		return err
	}
	var v any
	var err error
	if info.pipe != nil {
		v, err = info.pipe.eval(ctx, st)
	} else {
		v, err = ctx.Evaluate(info.expr)
	}
	if err != nil && isUndefined(err) {
		if name := missingKey(info.vars, st.scope); name != "" || !nilAlong(info.vars, st.scope) {
			return &UndefinedError{Name: st.undefinedName()}
		}
		// Every variable and key the output reads is bound and one path
		// goes through nil: what osteele/liquid's strict mode refused is
		// a property of nil, which LiquidJS reads as nil. Evaluate it so.
		v, err = info.expr.Evaluate(expressions.NewContext(st.scope, st.lenient))
		if err != nil && isUndefined(err) {
			return &UndefinedError{Name: st.undefinedName()}
		}
	}
	if err != nil {
		return err
	}
	if v == nil {
		// osteele/liquid yields nil for a missing key; LiquidJS's strict
		// mode fails (a property of nil is nil there). Name the first
		// path that does not resolve.
		if name := missingKey(info.vars, st.scope); name != "" {
			return &UndefinedError{Name: name}
		}
	}
	return writeOutput(w, v, st)
}

// writeOutput writes v as an output tag shows it, charging its length to
// the work meter first.
func writeOutput(w io.Writer, v any, st *state) error {
	s, err := outputString(v, st)
	if err != nil {
		return err
	}
	if err := st.charge(len(s)); err != nil {
		return err
	}
	_, err = io.WriteString(w, s)
	return err
}

// isUndefined reports osteele/liquid's strict-mode failure.
func isUndefined(err error) bool {
	for err != nil {
		if ie, ok := err.(expressions.InterpreterError); ok && string(ie) == "undefined variable" {
			return true
		}
		switch e := err.(type) {
		case interface{ Cause() error }:
			err = e.Cause()
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		default:
			return false
		}
	}
	return false
}

// missingKey returns the first of paths that names an unbound variable or
// a property LiquidJS's strict mode finds undefined (propertyOf), a
// property of nil counting as resolved (nil).
func missingKey(paths [][]string, scope map[string]any) string {
	for _, p := range paths {
		cur, ok := scope[p[0]]
		if !ok {
			return p[0]
		}
		for i := 1; i < len(p); i++ {
			next, found, known := propertyOf(cur, p[i])
			if !known {
				break
			}
			if !found {
				return strings.Join(p[:i+1], ".")
			}
			cur = next
		}
	}
	return ""
}

// propertyOf reads property key of v as LiquidJS does: a map's key, a
// list's size, first and last (first and last of an empty list are
// undefined), a string's size and length; any other property of a list,
// string, number or boolean is undefined. known is false for nil (whose
// properties are nil) and for values of other Go types, which
// osteele/liquid resolves itself.
func propertyOf(v any, key string) (next any, found, known bool) {
	v = values.ToLiquid(v)
	switch v := v.(type) {
	case nil:
		return nil, true, false
	case map[string]any:
		next, found = v[key]
		return next, found, true
	case string:
		if key == "size" || key == "length" {
			return utf8.RuneCountInString(v), true, true
		}
		return nil, false, true
	case bool, int, int64, float64:
		return nil, false, true
	case emptyDrop:
		// LiquidJS's drops have no properties; size counts their own (0).
		return 0, key == "size", true
	}
	if items, ok := listOf(v); ok {
		switch key {
		case "size":
			return len(items), true, true
		case "first":
			if len(items) > 0 {
				return items[0], true, true
			}
		case "last":
			if len(items) > 0 {
				return items[len(items)-1], true, true
			}
		}
		return nil, false, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Map && rv.Type().Key().Kind() == reflect.String {
		e := rv.MapIndex(reflect.ValueOf(key).Convert(rv.Type().Key()))
		if !e.IsValid() {
			return nil, false, true
		}
		return e.Interface(), true, true
	}
	return nil, true, false
}

// nilAlong reports whether one of paths meets nil before its end, in maps
// of scope.
func nilAlong(paths [][]string, scope map[string]any) bool {
	for _, p := range paths {
		cur, ok := scope[p[0]]
		for i := 1; ok && i < len(p); i++ {
			cur = values.ToLiquid(cur)
			if cur == nil {
				return true
			}
			m, isMap := cur.(map[string]any)
			if !isMap {
				break
			}
			cur, ok = m[p[i]]
		}
	}
	return false
}

// missingName returns the first of paths that does not resolve in scope:
// the root name when the variable is unbound, the dotted prefix up to the
// missing key when a property of a map is missing. It returns "" when every
// path resolves.
func missingName(paths [][]string, scope map[string]any) string {
	for _, p := range paths {
		if name := missingProperty(p, scope); name != "" {
			return name
		}
	}
	return ""
}

// missingProperty walks path through maps in scope and returns the dotted
// prefix that names a missing key or a property of nil, or "" when the path
// resolves (to a value, to nil at its end, or to something that is not a
// map, whose properties osteele/liquid resolves itself).
func missingProperty(path []string, scope map[string]any) string {
	cur, ok := scope[path[0]]
	if !ok {
		return path[0]
	}
	for i := 1; i < len(path); i++ {
		cur = values.ToLiquid(cur)
		if cur == nil {
			// osteele/liquid's strict mode fails on a property of nil
			// in a tag (an output reads it as nil, as LiquidJS does:
			// see renderOutput).
			return strings.Join(path[:i+1], ".")
		}
		rv := reflect.ValueOf(cur)
		if rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String {
			return ""
		}
		e := rv.MapIndex(reflect.ValueOf(path[i]).Convert(rv.Type().Key()))
		if !e.IsValid() {
			return strings.Join(path[:i+1], ".")
		}
		cur = e.Interface()
	}
	return ""
}

// outputString formats a value the way osteele/liquid writes an output:
// lists are written item after item; a range is metered before it is
// expanded.
func outputString(v any, st *state) (string, error) {
	v = values.ToLiquid(v)
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case int:
		return strconv.Itoa(v), nil
	case float64:
		return jsNumberString(v), nil
	case bool:
		return strconv.FormatBool(v), nil
	case time.Time:
		return v.Format("2006-01-02 15:04:05 -0700"), nil
	case []byte:
		return string(v), nil
	case values.Range:
		if err := st.chargeValue(v); err != nil {
			return "", err
		}
		var b strings.Builder
		for i := range rangeLen(v) {
			b.WriteString(strconv.Itoa(v.Index(i).(int)))
		}
		return b.String(), nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Array, reflect.Slice:
		var b strings.Builder
		for i := range rv.Len() {
			item := rv.Index(i)
			if !item.IsValid() {
				continue
			}
			s, err := outputString(item.Interface(), st)
			if err != nil {
				return "", err
			}
			if b.Len()+len(s) > MaxOutput {
				return "", st.fail(&LimitError{Limit: "output", Max: MaxOutput})
			}
			b.WriteString(s)
		}
		return b.String(), nil
	case reflect.Pointer:
		if rv.IsNil() {
			return "", nil
		}
		return outputString(rv.Elem().Interface(), st)
	}
	return jsString(v), nil
}

// UndefinedError reports a variable, or a property of a map, that the
// template reads and nothing binds. Name is the variable ("firmName") or the
// dotted path to the missing key ("firm.city").
type UndefinedError struct {
	Name string
}

// Error implements the error interface.
func (e *UndefinedError) Error() string { return fmt.Sprintf("undefined variable %q", e.Name) }
