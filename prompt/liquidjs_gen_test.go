package prompt_test

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestLiquidJSDifferentialGenerated is the differential's fuzz run: it
// generates random templates from a grammar of the constructs agent
// authors use (outputs with filter chains, if/unless/case with and/or
// conditions, for loops with modifiers, assign, capture, echo, liquid,
// increment, decrement, cycle, tablerow, raw, comments, break and continue
// anywhere, literals) and renders each with LiquidJS and with
// prompt.Render; output and error class must match, with no exception.
// The grammar covers every tag and every filter LiquidJS has, whitespace
// control, ranges (empty and descending ones too), nil, empty and blank
// values, nested loops and conditions; it leaves out only what the
// package refuses on purpose (include, render, layout, block).
//
// KINDGI_LIQUIDJS_FUZZ_N sets the number of templates (default 300) and
// KINDGI_LIQUIDJS_FUZZ_SEED the seed (default: random, logged), so a
// failure can be replayed.
func TestLiquidJSDifferentialGenerated(t *testing.T) {
	if !liquidjsAvailable(t) {
		return
	}
	n := 300
	if v, err := strconv.Atoi(os.Getenv("KINDGI_LIQUIDJS_FUZZ_N")); err == nil && v > 0 {
		n = v
	}
	seed := rand.Uint64()
	if v, err := strconv.ParseUint(os.Getenv("KINDGI_LIQUIDJS_FUZZ_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d, %d templates (KINDGI_LIQUIDJS_FUZZ_SEED=%d to replay)", seed, n, seed)
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	c := loadCorpus(t, "testdata/liquid-corpus.json")
	base := c.Contexts["base"]
	templates := make([]string, n)
	contexts := make([]map[string]any, n)
	for i := range templates {
		templates[i] = g.template()
		ctx := cloneJSON(t, base)
		for k, v := range injected() {
			ctx[k] = v
		}
		contexts[i] = ctx
	}
	const batch = 500
	failures := 0
	classes := map[string]int{}
	for from := 0; from < n; from += batch {
		to := min(from+batch, n)
		js := renderLiquidJS(t, templates[from:to], contexts[from:to])
		for i, want := range js {
			tpl := templates[from+i]
			got := renderGo(tpl, cloneJSON(t, base))
			if got.Error != nil && got.Error.Class == "parse" && strings.Contains(got.Error.Message, " is refused: ") {
				// A construct the package documentation lists as refused
				// at Define, with what LiquidJS would do.
				classes["refused"]++
				continue
			}
			if !got.same(want) {
				failures++
				if failures <= 20 {
					t.Errorf("template %q\n  liquidjs: %v\n  prompt:   %v", tpl, want, got)
				}
				continue
			}
			if want.Error != nil {
				classes[want.Error.Class]++
			} else {
				classes["output"]++
			}
		}
	}
	if failures > 0 {
		t.Errorf("%d of %d generated templates differ (seed %d)", failures, n, seed)
	}
	t.Logf("%d templates (seed %d): %d differ, %d refused at Define (documented); agreeing: %d outputs, %d missing-parameter, %d render-failure, %d parse errors",
		n, seed, failures, classes["refused"], classes["output"], classes["missing-parameter"], classes["render-failure"], classes["parse"])
}

// gen generates templates over the corpus's "base" context.
type gen struct {
	r     *rand.Rand
	depth int
	loops int
}

func (g *gen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g *gen) template() string {
	g.depth, g.loops = 0, 0
	var b strings.Builder
	for range 1 + g.r.IntN(4) {
		b.WriteString(g.node())
	}
	return b.String()
}

func (g *gen) node() string {
	if g.depth > 2 {
		return g.leaf()
	}
	g.depth++
	defer func() { g.depth-- }()
	switch g.r.IntN(16) {
	case 0, 1:
		return g.open("if "+g.cond()) + g.body() + g.maybeElse() + g.open("endif")
	case 2:
		return g.open("unless "+g.cond()) + g.body() + g.maybeElse() + g.open("endunless")
	case 3:
		return g.open("case "+g.value()) + g.open("when "+g.value()+g.pick(", ", " or ")+g.value()) + g.body() + g.open("else") + g.body() + g.open("endcase")
	case 4, 5, 6:
		g.loops++
		v := "it" + strconv.Itoa(g.loops)
		els := ""
		if g.r.IntN(3) == 0 {
			els = g.open("else") + g.body()
		}
		return g.open("for "+v+" in "+g.collection()+g.modifiers()) + g.loopBody(v) + els + g.open("endfor")
	case 7:
		g.loops++
		v := "tr" + strconv.Itoa(g.loops)
		return g.open("tablerow "+v+" in "+g.collection()+g.pick("", " cols: 2", " cols: 1 limit: 2", " offset: 1", " cols: n")) +
			"{{ " + v + " }}" + g.pick("{{ tablerowloop.col }}", "{{ tablerowloop.row }}{{ tablerowloop.col_last }}", "{{ tablerowloop.index }}{{ tablerowloop.last }}", "") + g.open("endtablerow")
	case 8:
		g.loops++
		v := "cap" + strconv.Itoa(g.loops)
		return g.open("capture "+v) + g.body() + g.open("endcapture") + "{{ " + v + " }}"
	case 9:
		return "{% liquid\n  assign lq = " + g.expr() + "\n  echo lq\n%}"
	}
	return g.leaf()
}

func (g *gen) leaf() string {
	switch g.r.IntN(14) {
	case 0:
		return g.pick("text ", " ", "\n", "a\n  b", "x, y. ", "\t")
	case 1, 2:
		return g.open("assign av = "+g.expr()) + g.pick("", "{{ av }}")
	case 3:
		return g.open("echo " + g.expr())
	case 4:
		return g.open("increment " + g.pick("c1", "c2", "n"))
	case 5:
		return g.open("decrement " + g.pick("c1", "c3"))
	case 6:
		return g.open(g.pick(`cycle "x", "y", "z"`, `cycle "g": "a", "b"`, `cycle s, n`))
	case 7:
		return g.pick("{% raw %}{{ s }}{% endraw %}", "{% comment %}x{{ s }}{% endcomment %}", "{% # note %}", "{%- # trimmed -%}", "{% raw %} {% if %} {% endraw %}")
	case 8:
		if g.r.IntN(4) == 0 {
			return g.open(g.pick("break", "continue"))
		}
	case 9:
		return g.dateOutput()
	}
	return g.output()
}
func (g *gen) open(content string) string {
	l, r := "{%", "%}"
	if g.r.IntN(4) == 0 {
		l = "{%-"
	}
	if g.r.IntN(4) == 0 {
		r = "-%}"
	}
	return l + " " + content + " " + r
}

func (g *gen) output() string {
	l, r := "{{", "}}"
	if g.r.IntN(5) == 0 {
		l = "{{-"
	}
	if g.r.IntN(5) == 0 {
		r = "-}}"
	}
	return l + " " + g.expr() + " " + r
}

func (g *gen) body() string {
	var b strings.Builder
	for range 1 + g.r.IntN(2) {
		b.WriteString(g.node())
	}
	return b.String()
}

func (g *gen) maybeElse() string {
	switch g.r.IntN(4) {
	case 0:
		return g.open("else") + g.body()
	case 1:
		return g.open("elsif "+g.cond()) + g.body()
	case 2:
		return g.open("elsif "+g.cond()) + g.body() + g.open("else") + g.body()
	}
	return ""
}

func (g *gen) loopBody(v string) string {
	parts := []string{"{{ " + v + " }}", "{{ forloop.index }}", g.pick("{% if forloop.first %}F{% endif %}", "{% if forloop.last %}L{% endif %}", "{{ forloop.length }}", "{{ forloop.rindex }}{{ forloop.index0 }}", "{{ forloop.name }}"), g.body()}
	if g.r.IntN(4) == 0 {
		parts = append(parts, "{% if forloop.index == 2 %}{% "+g.pick("break", "continue")+" %}{% endif %}")
	}
	g.r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	body := strings.Join(parts[:1+g.r.IntN(len(parts))], "")
	if g.r.IntN(6) == 0 {
		body += "{{ " + v + " }}" // read after the loop too
	}
	return body
}

func (g *gen) collection() string {
	return g.pick("arr", "nums", "recs", "empty_a", "(1..3)", "(2..n)", "(5..3)", "(neg..1)", "mixed", "s", "empty_s", "z", "n", "m.inner", `"abc"`, "z.list", "no")
}

func (g *gen) modifiers() string {
	mods := []string{}
	if g.r.IntN(3) == 0 {
		mods = append(mods, "limit: "+g.pick("1", "2", "5", "0", "-1", "n", "z"))
	}
	if g.r.IntN(3) == 0 {
		mods = append(mods, "offset: "+g.pick("1", "2", "-1", "continue", "m.n"))
	}
	if g.r.IntN(3) == 0 {
		mods = append(mods, "reversed")
	}
	g.r.Shuffle(len(mods), func(i, j int) { mods[i], mods[j] = mods[j], mods[i] })
	if len(mods) == 0 {
		return ""
	}
	return " " + strings.Join(mods, " ")
}

func (g *gen) cond() string {
	c := g.comparison()
	for g.r.IntN(3) == 0 {
		c += " " + g.pick("and", "or") + " " + g.comparison()
	}
	return c
}

func (g *gen) comparison() string {
	switch g.r.IntN(8) {
	case 0:
		return g.value()
	case 1:
		return g.pick(g.value(), "(1..3)", "m", "recs[0]", "z") + " contains " + g.pick(`"a"`, `"World"`, "2", `"x"`, "nil", `"k"`, "1")
	case 2:
		return g.pick("s", "arr", "empty_s", "empty_a", "ws", "z", "m", "empty_m", "no", "z.name") + " " + g.pick("==", "!=") + " " + g.pick("empty", "blank", "nil", "null")
	case 3:
		return "not " + g.value()
	}
	if g.r.IntN(2) == 0 {
		return g.value() + " " + g.pick("==", "!=") + " " + g.value()
	}
	return g.value() + " " + g.pick("<", ">", "<=", ">=") + " " + g.value()
}

func (g *gen) value() string {
	return g.pick("s", "n", "f", "neg", "t", "no", "z", "arr", "nums", "m.k", "m.n", "m.inner.deep", "recs[0].name", "arr[1]", "arr.size", "arr.first", "arr.last",
		"empty_s", "ws", `"a"`, `"Hello World"`, "1", "7", "2.5", "-3", "true", "false", "nil", "z.name", "num_s", "int_s", "(1..3)", "empty", "blank", "m", "mixed")
}

func (g *gen) expr() string {
	v := g.value()
	for range g.r.IntN(4) {
		v += " | " + g.filter()
	}
	return v
}

// filters are every LiquidJS filter with arguments that exercise it
// (sample only through the size of two items: it is random in both
// engines), the date filters apart (dateOutput).
var filters = []string{
	"escape", "xml_escape", "escape_once", "newline_to_br", "strip_html", "abs", "at_least: 5", "at_most: 2", "ceil",
	"divided_by: 2", "divided_by: 0", "floor", "minus: 1.5", "plus: 2", "modulo: 3", "times: 3", "round", "round: 1", "round: 2",
	"url_decode", "url_encode", "cgi_escape", "uri_escape", "slugify", `join: ","`, "join", "last", "first", "reverse", "sort",
	`sort: "age"`, "sort_natural", "size", `map: "name"`, "sum", `sum: "age"`, "compact", "concat: nums", `push: "q"`,
	`unshift: "u"`, "pop", "shift", "slice: 1, 2", "slice: -1", `where: "tag", "a"`, `reject: "tag", "a"`,
	`where_exp: "r", "r.age > 28"`, `reject_exp: "r", "r.tag == 'a'"`, `group_by: "tag"`, `group_by_exp: "r", "r.age > 28"`,
	`has: "tag", "b"`, `has_exp: "r", "r.age < n"`, `find_index: "name", "Bob"`, `find_index_exp: "r", "r.name contains 'y'"`,
	`find: "tag", "a"`, `find_exp: "r", "r.age >= 30"`, "uniq", "sample: 2 | size", `append: "!"`, `prepend: "> "`, "lstrip", "downcase", "upcase",
	`remove: "l"`, `remove_first: "o"`, `remove_last: "o"`, "rstrip", `split: "o"`, `split: ""`, "strip", "strip_newlines", "squish",
	"capitalize", `replace: "o", "0"`, `replace_first: "l", "L"`, `replace_last: "l", "L"`, "truncate: 4", `truncate: 5, ".."`,
	"truncatewords: 1", "normalize_whitespace", "number_of_words", "array_to_sentence_string", "base64_encode", "base64_decode",
	"sha256", `hmac_sha256: "k"`, `default: "d"`, `default: "d", allow_false: true`, "raw", "jsonify", "to_integer", "json",
}

// dateOutput is a date filter on a value it reads as a date (a time with
// or without an offset, a date, seconds since the epoch as a number or
// digits, a boolean) or does not (returned as it is). Lists and maps are
// left out: LiquidJS hands their string to V8's Date parser (see the
// package documentation).
func (g *gen) dateOutput() string {
	v := g.pick("date_s", `"2024-03-05T10:20:30+02:00"`, `"2024-03-05 10:20:30"`, `"2024-03-05"`, `"2024-07-01T23:59:59-04:00"`,
		"n", "1700000000", `"1700000000"`, "true", "false", "z", `"not a date"`, "neg", "f")
	f := g.pick(`date: "%Y-%m-%d %H:%M:%S %z"`, `date: "%a %b %e %j %p %I %y %A %B %d"`, "date_to_xmlschema", "date_to_rfc822",
		"date_to_string", "date_to_long_string", `date: "%s %H:%M"`)
	return "{{ " + v + " | " + f + " }}"
}

func (g *gen) filter() string {
	return filters[g.r.IntN(len(filters))]
}
