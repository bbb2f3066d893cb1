package tmpl

import (
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"unicode"

	"github.com/osteele/liquid/expressions"
	"github.com/osteele/liquid/render"
	"github.com/osteele/liquid/values"
)

// This file holds what LiquidJS has and osteele/liquid lacks: the empty,
// blank and null literals, the echo, liquid, increment, decrement and
// (race-free) cycle tags, and inline comments. The literals and the two
// syntactic tags are rewritten before parsing (expand); the other tags are
// registered in the parse configuration and keep their state in the
// render's own state.

// Names the empty and blank literals are rewritten to. They are bound in
// every render; a template cannot spell them without the rewrite reading
// its "empty" or "blank" the same way.
const (
	emptyName = "__kindgi_empty"
	blankName = "__kindgi_blank"
)

// literalBindings binds the rewritten literals.
var literalBindings = map[string]any{emptyName: emptyDrop{}, blankName: emptyDrop{blank: true}}

// emptyDrop is LiquidJS's EmptyDrop (blank false) or BlankDrop (blank
// true) as an osteele/liquid value: it compares equal to an empty string,
// list or map (blank: also to nil, false and a string of white space), is
// never equal to another drop (a case reads its own drop as ""), never
// less or greater than anything, is
// truthy, and prints as "".
type emptyDrop struct{ blank bool }

var _ values.Value = emptyDrop{}

// Interface returns the drop itself, so that filters see it as LiquidJS's
// see theirs (json prints {}; string filters read ""; see jsString).
func (d emptyDrop) Interface() any { return d }
func (d emptyDrop) Int() int       { return 0 }
func (d emptyDrop) Less(values.Value) bool {
	return false
}
func (d emptyDrop) Contains(values.Value) bool { return false }
func (d emptyDrop) IndexValue(values.Value) values.Value {
	return values.ValueOf(nil)
}
func (d emptyDrop) PropertyValue(values.Value) values.Value {
	return values.ValueOf(nil)
}
func (d emptyDrop) Test() bool { return true }

func (d emptyDrop) Equal(other values.Value) bool {
	if _, ok := other.(emptyDrop); ok {
		return false
	}
	v := values.ToLiquid(other.Interface())
	if d.blank {
		switch v := v.(type) {
		case nil:
			return true
		case bool:
			return !v
		case string:
			return strings.TrimSpace(v) == ""
		}
	}
	if v == nil {
		return false
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.String, reflect.Slice, reflect.Array, reflect.Map:
		return rv.Len() == 0
	}
	return false
}

// expand rewrites source into what osteele/liquid parses: {% liquid %} tags
// become one tag per line, inline comments {% # … %} become empty comment
// blocks (trim markers kept), and the literals null, empty and blank are
// rewritten in every output and tag. Line breaks are kept, so error
// positions stay right. An unclosed delimiter is left for normalize to
// report.
func expand(src string) (string, error) {
	if !strings.Contains(src, "{") {
		return src, nil
	}
	var b strings.Builder
	last, i := 0, 0
	for {
		j, end, content, isOutput, ok := nextClosed(src, i)
		if !ok {
			break
		}
		i = end + 2
		if isOutput {
			if r := rewriteLiterals(content); r != content {
				b.WriteString(src[last : j+2])
				b.WriteString(r)
				last = end
			}
			continue
		}
		ltrim, rtrim := strings.HasPrefix(content, "-"), strings.HasSuffix(content, "-") && len(content) > 1
		inner := content
		if ltrim {
			inner = inner[1:]
		}
		if rtrim {
			inner = inner[:len(inner)-1]
		}
		name := tagName(inner)
		trimmed := strings.TrimLeft(inner, " \t\r\n")
		switch {
		case strings.HasPrefix(trimmed, "#"):
			b.WriteString(src[last:j])
			b.WriteString(tagOpen(ltrim) + " comment " + strings.Repeat("\n", strings.Count(inner, "\n")) + "%}{% endcomment " + tagClose(rtrim))
			last = i
		case name == "liquid":
			b.WriteString(src[last:j])
			b.WriteString(expandLiquid(strings.TrimPrefix(trimmed, "liquid"), ltrim, rtrim))
			last = i
		case name == "raw":
			k := findEndRaw(src, i)
			if k < 0 {
				i = len(src)
				continue
			}
			i = k
		case name == "comment":
			// Leave the comment's body alone, up to its end tag.
			k := strings.Index(src[i:], "endcomment")
			if k < 0 {
				return "", syntaxErr(src, j, fmt.Sprintf("tag %q not closed", excerpt(src[j:])))
			}
			if open := strings.LastIndex(src[i:i+k], "{%"); open >= 0 {
				i += open
			}
		default:
			if r := rewriteContent(content); r != content {
				b.WriteString(src[last : j+2])
				b.WriteString(r)
				last = end
			}
		}
	}
	if last == 0 {
		return src, nil
	}
	b.WriteString(src[last:])
	return b.String(), nil
}

func tagOpen(trim bool) string {
	if trim {
		return "{%-"
	}
	return "{%"
}

func tagClose(trim bool) string {
	if trim {
		return "-%}"
	}
	return "%}"
}

// expandLiquid turns the body of a {% liquid %} tag into one tag per
// non-empty line, with nothing between them; the line breaks of the body go inside the tags, as white
// space before their closing delimiter, so the line count is kept. Lines
// starting with "#" are comments; comment … endcomment lines are dropped.
func expandLiquid(body string, ltrim, rtrim bool) string {
	var tags []string
	var breaks []int // line breaks after each tag's line, up to the next tag
	lead := 0        // line breaks before the first tag
	inComment := 0
	for k, line := range strings.Split(body, "\n") {
		if k > 0 {
			if len(breaks) == 0 {
				lead++
			} else {
				breaks[len(breaks)-1]++
			}
		}
		t := strings.TrimSpace(line)
		switch name := tagName(t); {
		case t == "" || strings.HasPrefix(t, "#"):
			continue
		case name == "comment":
			inComment++
			continue
		case name == "endcomment" && inComment > 0:
			inComment--
			continue
		case inComment > 0:
			continue
		}
		tags = append(tags, rewriteContent(t))
		breaks = append(breaks, 0)
	}
	if len(tags) == 0 {
		return tagOpen(ltrim) + " comment " + strings.Repeat("\n", lead) + "%}{% endcomment " + tagClose(rtrim)
	}
	breaks[0] += lead
	var b strings.Builder
	for k, t := range tags {
		if k == 0 {
			b.WriteString(tagOpen(ltrim))
		} else {
			b.WriteString("{%")
		}
		b.WriteString(" " + t + " " + strings.Repeat("\n", breaks[k]))
		if k == len(tags)-1 {
			b.WriteString(tagClose(rtrim))
		} else {
			b.WriteString("%}")
		}
	}
	return b.String()
}

// rewriteContent rewrites the content of an output or tag: the literals
// (rewriteLiterals). Conditions (and/or from the right, <>) are read by
// parseCond.
func rewriteContent(content string) string {
	return rewriteLiterals(content)
}

// alternations counts the changes between and and or in a condition: the
// groups regroup opens.
func alternations(cond string) int {
	n, prev := 0, ""
	for _, t := range exprTokens(cond) {
		if t == "and" || t == "or" {
			if prev != "" && t != prev {
				n++
			}
			prev = t
		}
	}
	return n
}

// rewriteLiterals rewrites the LiquidJS literals in the content of an
// output or tag: null becomes nil, empty and blank the names bound to
// their drops. A comparison with the drop on its right is turned around
// (osteele/liquid asks the left operand to compare), its operator mirrored.
func rewriteLiterals(content string) string {
	if !strings.Contains(content, "null") && !strings.Contains(content, "empty") && !strings.Contains(content, "blank") {
		return content
	}
	var b strings.Builder
	changed, drop := false, false
	prev := byte(0)
	for i := 0; i < len(content); {
		c := content[i]
		switch {
		case c == '"' || c == '\'':
			j := quotedEnd(content, i)
			if j < 0 {
				b.WriteString(content[i:])
				i = len(content)
				continue
			}
			b.WriteString(content[i:j])
			i = j
			prev = 's'
		case isIdentStart(c):
			j := i + 1
			for j < len(content) && (isWordByte(content[j]) || content[j] == '-') {
				j++
			}
			word := content[i:j]
			next := byte(0)
			if j < len(content) {
				next = content[j]
			}
			if prev != '.' && next != ':' && next != '?' {
				switch word {
				case "null":
					word, changed = "nil", true
				case "empty":
					word, changed, drop = emptyName, true, true
				case "blank":
					word, changed, drop = blankName, true, true
				}
			}
			b.WriteString(word)
			i = j
			prev = 'i'
		default:
			b.WriteByte(c)
			if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				prev = c
			}
			i++
		}
	}
	if !changed {
		return content
	}
	out := b.String()
	if drop {
		out = turnInContent(out)
	}
	return out
}

// turnInContent applies turnComparisons to the expression of an output or
// tag content: trim markers and a tag's name are kept as they are.
func turnInContent(content string) string {
	lead, trail := "", ""
	if strings.HasPrefix(content, "-") {
		lead, content = "-", content[1:]
	}
	if strings.HasSuffix(content, "-") {
		trail, content = "-", content[:len(content)-1]
	}
	trimmed := strings.TrimLeft(content, " \t\r\n")
	n := 0
	for n < len(trimmed) && isWordByte(trimmed[n]) {
		n++
	}
	switch trimmed[:n] {
	case "if", "elsif", "unless":
		// cond.go compares a drop on either side as LiquidJS does.
		return lead + content + trail
	case "echo":
		return lead + " " + trimmed[:n] + " " + turnComparisons(trimmed[n:]) + " " + trail
	case "":
	default:
		if n > 0 && n < len(trimmed) && !strings.ContainsRune(" \t\r\n", rune(trimmed[n])) {
			break // not a tag name: an output's variable
		}
		if _, isTag := tagsWithoutComparisons[trimmed[:n]]; isTag {
			return lead + content + trail
		}
	}
	return lead + " " + turnComparisons(content) + " " + trail
}

// tagsWithoutComparisons are tags whose arguments are no condition.
var tagsWithoutComparisons = map[string]struct{}{
	"assign": {}, "for": {}, "tablerow": {}, "case": {}, "when": {}, "cycle": {},
	"capture": {}, "increment": {}, "decrement": {},
}

// mirrored maps a comparison operator to the one that compares its
// operands the other way round.
var mirrored = map[string]string{"==": "==", "!=": "!=", "<>": "<>", "<": ">", ">": "<", "<=": ">=", ">=": "<="}

// turnComparisons puts a drop on the left of each comparison it is the
// right operand of: `x == __kindgi_empty` becomes `__kindgi_empty == x`.
// The expression is split into comparisons at "and" and "or" outside
// quotes.
func turnComparisons(expr string) string {
	toks := exprTokens(expr)
	var out []string
	seg := []string{}
	flush := func() {
		out = append(out, turnOne(seg)...)
		seg = seg[:0]
	}
	for _, t := range toks {
		if t == "and" || t == "or" {
			flush()
			out = append(out, t)
			continue
		}
		seg = append(seg, t)
	}
	flush()
	return strings.Join(out, " ")
}

// turnOne turns one comparison around when its right operand is a drop.
func turnOne(seg []string) []string {
	for k, t := range seg {
		op, ok := mirrored[t]
		if !ok || k+2 != len(seg) || (seg[k+1] != emptyName && seg[k+1] != blankName) {
			continue
		}
		if k == 1 && (seg[0] == emptyName || seg[0] == blankName) {
			return seg
		}
		turned := append([]string{seg[k+1], op}, seg[:k]...)
		return turned
	}
	return seg
}

// exprTokens splits an expression into quoted strings, operators and the
// runs of other characters between white space.
func exprTokens(expr string) []string {
	var toks []string
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case isExprSpace(c):
			i++
		case c == '"' || c == '\'':
			j := quotedEnd(expr, i)
			if j < 0 {
				toks = append(toks, expr[i:])
				return toks
			}
			toks = append(toks, expr[i:j])
			i = j
		case c == '=' || c == '!' || c == '<' || c == '>':
			j := i + 1
			if j < len(expr) && (expr[j] == '=' || c == '<' && expr[j] == '>') {
				j++
			}
			toks = append(toks, expr[i:j])
			i = j
		default:
			j := i
			for j < len(expr) && !strings.ContainsRune(" \t\n\r\"'=!<>", rune(expr[j])) {
				j++
			}
			toks = append(toks, expr[i:j])
			i = j
		}
	}
	return toks
}

// addLiquidJSTags registers echo, increment, decrement and cycle.
func addLiquidJSTags(cfg *render.Config) {
	// echo is replaced by an output probe when the template is
	// instrumented; this definition only lets it parse.
	cfg.AddTag("echo", func(string) (func(io.Writer, render.Context) error, error) {
		return func(io.Writer, render.Context) error { return nil }, nil
	})
	cfg.AddTag("increment", counterTag(1))
	cfg.AddTag("decrement", counterTag(-1))
	cfg.AddTag("cycle", cycleTag)
}

// counterTag compiles {% increment name %} (step 1) and
// {% decrement name %} (step -1) as LiquidJS has them: a counter per name
// and render, starting from the render's own value of that name when it is
// a number and from 0 otherwise; increment writes the value before the
// step, decrement the value after. The counter is also the variable's
// value unless an assign or capture has shadowed it.
func counterTag(step float64) func(string) (func(io.Writer, render.Context) error, error) {
	return func(args string) (func(io.Writer, render.Context) error, error) {
		name := strings.TrimSpace(args)
		if name == "" || !isIdentStart(name[0]) || strings.IndexFunc(name, func(r rune) bool { return !(r < 128 && (isWordByte(byte(r)) || r == '-')) }) >= 0 {
			return nil, fmt.Errorf("syntax error: %q is not a variable name", name)
		}
		return func(w io.Writer, ctx render.Context) error {
			st := stateOf(ctx)
			if st.counters == nil {
				st.counters = map[string]float64{}
			}
			cur, ok := st.counters[name]
			if !ok {
				cur = number(st.env[name])
			}
			next := cur + step
			st.counters[name] = next
			// The counter shows through the variable unless an assign or
			// capture shadows it: the binding is still the render's own
			// value, or the counter's last one.
			bound, present := ctx.Bindings()[name]
			if !present || sameScalar(bound, st.env[name]) || ok && isNumber(bound) && number(bound) == cur {
				ctx.Set(name, numberValue(next))
			}
			shown := cur
			if step < 0 {
				shown = next
			}
			s, _ := outputString(numberValue(shown), st)
			if err := st.charge(len(s)); err != nil {
				return err
			}
			_, err := io.WriteString(w, s)
			return err
		}, nil
	}
}

// sameScalar reports whether a and b are the same nil, boolean, number or
// string.
func sameScalar(a, b any) bool {
	if isNumber(a) && isNumber(b) {
		return number(a) == number(b)
	}
	switch a.(type) {
	case nil, bool, int, int64, float64, string:
		switch b.(type) {
		case nil, bool, int, int64, float64, string:
			return a == b
		}
	}
	return false
}

func isNumber(v any) bool {
	switch v.(type) {
	case int, int64, float64, int32, float32:
		return true
	}
	return false
}

// number returns v as a float64 when it is a number, else 0.
func number(v any) float64 {
	switch v := v.(type) {
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case int32:
		return float64(v)
	case float64:
		return v
	case float32:
		return float64(v)
	}
	return 0
}

// numberValue returns f as an int when it is integral, else as a float64.
func numberValue(f float64) any {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int(f)
	}
	return f
}

// cycleTag compiles {% cycle a, b, … %} and {% cycle group: a, b, … %} as
// LiquidJS has them: one position per group value and list of candidates
// (their source text) and render, so concurrent renders of one parsed
// template never share it.
func cycleTag(args string) (func(io.Writer, render.Context) error, error) {
	parts := splitTopLevel(args, ',')
	var group expressions.Expression
	if first := parts[0]; first != "" {
		if k := topLevelIndex(first, ':'); k >= 0 {
			g, err := expressions.Parse(first[:k])
			if err != nil {
				return nil, err
			}
			group = g
			parts[0] = first[k+1:]
		}
	}
	var srcs []string
	var cands []expressions.Expression
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("syntax error: cycle needs a list of values separated by commas")
		}
		e, err := expressions.Parse(p)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, p)
		cands = append(cands, e)
	}
	key := strings.Join(srcs, ",")
	return func(w io.Writer, ctx render.Context) error {
		st := stateOf(ctx)
		k := ":" + key
		if group != nil {
			g, err := ctx.Evaluate(group)
			if err != nil {
				return err
			}
			gs, err := outputString(g, st)
			if err != nil {
				return err
			}
			k = gs + k
		}
		if st.cycles == nil {
			st.cycles = map[string]int{}
		}
		idx := st.cycles[k]
		st.cycles[k] = (idx + 1) % len(cands)
		v, err := ctx.Evaluate(cands[idx])
		if err != nil {
			return err
		}
		return writeOutput(w, v, st)
	}, nil
}

// splitTopLevel splits s at sep outside quoted strings and brackets.
func splitTopLevel(s string, sep byte) []string {
	var parts []string
	depth, from := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\'':
			if j := strings.IndexByte(s[i+1:], c); j >= 0 {
				i += j + 1
			}
		case c == '(' || c == '[':
			depth++
		case c == ')' || c == ']':
			depth--
		case c == sep && depth == 0:
			parts = append(parts, s[from:i])
			from = i + 1
		}
	}
	return append(parts, s[from:])
}

// topLevelIndex returns the index of c in s outside quoted strings, or -1.
func topLevelIndex(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\'':
			if j := strings.IndexByte(s[i+1:], s[i]); j >= 0 {
				i += j + 1
			}
		case c:
			return i
		}
	}
	return -1
}

// applyTrim carries out whitespace control as LiquidJS does and removes the
// markers: "{%-" and "{{-" remove the white space at the end of the text
// right before them, "-%}" and "-}}" the white space at the start of the
// text right after them, and only that text — osteele/liquid instead trims
// whatever white space was written before, across tags that wrote nothing
// and from outputs too. The line breaks a trim removes move inside the
// delimiter, so line numbers stay right. Raw blocks are left as they are.
func applyTrim(src string) string {
	if !strings.Contains(src, "-%}") && !strings.Contains(src, "-}}") && !strings.Contains(src, "{%-") && !strings.Contains(src, "{{-") {
		return src
	}
	var b strings.Builder
	b.Grow(len(src))
	i := 0
	pendingRight := false // the last markup trims the text after it
	for {
		j, end, content, isOutput, ok := nextClosed(src, i)
		if !ok {
			break
		}
		text := src[i:j]
		ltrim := strings.HasPrefix(content, "-")
		rtrim := len(content) > (map[bool]int{true: 1, false: 0})[ltrim] && strings.HasSuffix(content, "-")
		var moved int // line breaks taken out of the text
		if pendingRight {
			t := strings.TrimLeftFunc(text, unicode.IsSpace)
			moved += strings.Count(text[:len(text)-len(t)], "\n")
			text = t
		}
		if ltrim {
			t := strings.TrimRightFunc(text, unicode.IsSpace)
			moved += strings.Count(text[len(t):], "\n")
			text = t
			content = content[1:]
		}
		if rtrim {
			content = content[:len(content)-1]
		}
		b.WriteString(text)
		b.WriteString(src[j : j+2])
		if moved > 0 {
			b.WriteString(strings.Repeat("\n", moved))
		}
		b.WriteString(content)
		b.WriteString(src[end : end+2])
		i = end + 2
		pendingRight = rtrim
		if !isOutput && tagName(content) == "raw" {
			if k := findEndRaw(src, i); k >= 0 {
				b.WriteString(src[i:k])
				i = k
				pendingRight = false
			}
		}
	}
	text := src[i:]
	if pendingRight {
		t := strings.TrimLeftFunc(text, unicode.IsSpace)
		b.WriteString(strings.Repeat("\n", strings.Count(text[:len(text)-len(t)], "\n")))
		// The line breaks after the last markup are gone: keep the count
		// only where no text follows (trailing breaks are not rendered).
		if t != "" {
			return b.String()[:b.Len()-strings.Count(text[:len(text)-len(t)], "\n")] + t
		}
		return b.String()[:b.Len()-strings.Count(text[:len(text)-len(t)], "\n")]
	}
	b.WriteString(text)
	return b.String()
}

// caseTag compiles {% case %} as LiquidJS has it (instrument puts it in
// place of osteele/liquid's): its clauses render in order, every when with
// a value equal to the case's (osteele/liquid renders the first only) and
// an else when no when before it did. A when's values (separated by commas
// or or) are compared in order, up to the first equal one, with LiquidJS's
// equality (cond.go): empty and blank as its drops.
func caseTag(node *render.BlockNode) (func(io.Writer, render.Context) error, error) {
	sel, err := operandOf(exprTokens(node.Args))
	if err != nil {
		return nil, err
	}
	type clause struct {
		values []*cond // nil for an else
		body   *render.BlockNode
	}
	clauses := make([]clause, 0, len(node.Clauses))
	for _, c := range node.Clauses {
		if c.Name != "when" {
			clauses = append(clauses, clause{body: c})
			continue
		}
		var vals []*cond
		var cur []string
		for _, t := range append(exprTokens(strings.ReplaceAll(c.Args, ",", " , ")), ",") {
			if t != "," && t != "or" {
				cur = append(cur, t)
				continue
			}
			if len(cur) == 0 {
				continue
			}
			v, err := operandOf(cur)
			if err != nil {
				return nil, err
			}
			vals, cur = append(vals, v), nil
		}
		if len(vals) == 0 {
			return nil, fmt.Errorf("syntax error: when needs a value")
		}
		clauses = append(clauses, clause{vals, c})
	}
	return func(w io.Writer, ctx render.Context) error {
		st := stateOf(ctx)
		target, err := sel.value(ctx, st)
		if err != nil {
			return err
		}
		// LiquidJS's case compares the value of its drop.
		switch target.(type) {
		case emptyDrop:
			target = ""
		case nullDrop:
			target = nil
		}
		hit := false
		for _, c := range clauses {
			match := c.values == nil && !hit
			for _, e := range c.values {
				v, err := e.value(ctx, st)
				if err != nil {
					return err
				}
				if jsEquals(target, v) {
					match, hit = true, true
					break
				}
			}
			if match {
				if err := ctx.RenderBlock(w, c.body); err != nil {
					return err
				}
			}
		}
		return nil
	}, nil
}

// ifTag compiles an if (or unless) block as LiquidJS has it: the branch
// of the first condition that holds renders (an unless's own condition
// negated; an unless may have elsif branches, as in LiquidJS), conditions
// evaluated as cond.go describes.
func ifTag(n *render.BlockNode) (func(io.Writer, render.Context) error, error) {
	type branch struct {
		test *cond // nil for an else
		body *render.BlockNode
	}
	first, err := parseCond(n.Args)
	if err != nil {
		return nil, err
	}
	if n.Name == "unless" {
		first = &cond{op: "not", left: first}
	}
	branches := []branch{{test: first, body: n}}
	for _, c := range n.Clauses {
		b := branch{body: c}
		if c.Name == "elsif" {
			if b.test, err = parseCond(c.Args); err != nil {
				return nil, err
			}
		}
		branches = append(branches, b)
	}
	return func(w io.Writer, ctx render.Context) error {
		st := stateOf(ctx)
		for _, b := range branches {
			if b.test != nil {
				ok, err := b.test.eval(ctx, st)
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
			}
			return ctx.RenderBlock(w, b.body)
		}
		return nil
	}, nil
}
