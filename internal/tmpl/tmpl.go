// Package tmpl holds the Liquid engine shared by agent.Define (which checks
// that instructions parse) and prompt.Render (which renders them): one
// osteele/liquid configuration, strict and LiquidJS-compatible, so that a
// template Define accepts is one Render can parse.
package tmpl

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/osteele/liquid/filters"
	"github.com/osteele/liquid/parser"
	"github.com/osteele/liquid/render"
)

// config is the engine configuration every template is parsed and rendered
// with. It is built once and only read afterwards, so it is safe for
// concurrent use.
var config = newConfig()

// newConfig builds the configuration: the standard filters and addTags'.
func newConfig() *render.Config {
	cfg := render.NewConfig()
	filters.AddStandardFilters(&cfg)
	addTags(&cfg)
	cfg.TemplateStore = nil
	cfg.StrictVariables = true
	return &cfg
}

// addTags registers the tags of a prompt: osteele/liquid's comment and raw
// blocks, this package's assign, break, continue and capture, and
// LiquidJS's tags (addLiquidJSTags). include and render are left out: they
// read files, and a prompt has none. if, unless, case, for and tablerow are
// rendered by this package's own renderers, which instrument puts in place
// (they parse their arguments): their definitions here only let them
// parse, an unless with elsif branches included, as in LiquidJS.
func addTags(cfg *render.Config) {
	cfg.AddTag("assign", assignTag)
	cfg.AddTag("break", loopSignalTag(errLoopBreak))
	cfg.AddTag("continue", loopSignalTag(errLoopContinue))
	cfg.AddBlock("comment")
	cfg.AddBlock("raw")
	cfg.AddBlock("capture").Compiler(captureTag)
	for _, name := range []string{"if", "unless"} {
		cfg.AddBlock(name).Clause("else").Clause("elsif").Compiler(parsedElsewhere)
	}
	cfg.AddBlock("case").Clause("when").Clause("else").Compiler(parsedElsewhere)
	cfg.AddBlock("for").Clause("else").Compiler(parsedElsewhere)
	cfg.AddBlock("tablerow").Compiler(parsedElsewhere)
	addLiquidJSTags(cfg)
}

// parsedElsewhere is the compiler of a block instrument replaces.
func parsedElsewhere(render.BlockNode) (func(io.Writer, render.Context) error, error) {
	return func(io.Writer, render.Context) error { return nil }, nil
}

// Template is a parsed, instrumented template. It is immutable and safe for
// concurrent use: every render keeps its state in its own bindings.
type Template struct {
	root  render.Node
	infos []nodeInfo
	// plain is set for a source without markup: its text is the output.
	plain bool
	text  string
	// outHint is the length of the last render's text (first the source's
	// length): what the next one reserves for its text.
	outHint atomic.Int64
}

// Parse parses source with the prompt engine's configuration, once it
// passed CheckSource (a *SourceError otherwise): LiquidJS syntax checks (an
// unclosed "{{" or "{%" is an error), the standard tags except include and
// render, LiquidJS's echo, liquid, increment, decrement, cycle and inline
// comments (liquidjs.go), the standard filters with LiquidJS's semantics
// (jsfilters.go; an unknown filter is a parse error), and strict variables.
func Parse(source string) (t *Template, err error) {
	// osteele/liquid's expression lexer panics on some input (a non-ASCII
	// letter in an identifier, found by FuzzRender); report it as the
	// syntax error it is.
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("Liquid syntax error: %s", panicMessage(r))
		}
	}()
	if err := CheckSource(source); err != nil {
		return nil, err
	}
	if !strings.Contains(source, "{{") && !strings.Contains(source, "{%") && len(source) <= MaxOutput {
		// No markup: LiquidJS renders the text as it is.
		return &Template{plain: true, text: source}, nil
	}
	if err := refuse(source); err != nil {
		return nil, err
	}
	root, err := compile(source)
	if err != nil {
		return nil, err
	}
	t = &Template{}
	children, err := t.instrument(root.(*render.SeqNode).Children)
	if err != nil {
		return nil, err
	}
	t.root = &render.SeqNode{Children: children}
	t.outHint.Store(int64(len(source)))
	return t, nil
}

// Check parses source with the configuration Render uses and returns the
// parse error, or nil. The error message is meant for a person: it names the
// line and the problem, e.g. `Liquid syntax error (line 1, col 10): output
// "{{ firmName" not closed`.
func Check(source string) error {
	_, err := Parse(source)
	return err
}

// compile normalizes and parses source into osteele/liquid's render tree.
func compile(source string) (render.Node, error) {
	expanded, err := expand(source)
	if err != nil {
		return nil, err
	}
	norm, err := normalize(applyTrim(expanded))
	if err != nil {
		return nil, err
	}
	root, perr := config.Compile(norm, parser.SourceLoc{LineNo: 1})
	if perr != nil {
		return nil, perr
	}
	if err := checkText(norm, root); err != nil {
		return nil, err
	}
	return root, nil
}

// checkText rejects text the engine passed through that LiquidJS would read
// as markup: a "{{" or "{%" left in a text node (an empty output "{{}}", a
// tag without a name such as "{% %}").
func checkText(src string, n render.Node) error {
	switch n := n.(type) {
	case *render.SeqNode:
		for _, c := range n.Children {
			if err := checkText(src, c); err != nil {
				return err
			}
		}
	case *render.BlockNode:
		for _, c := range n.Body {
			if err := checkText(src, c); err != nil {
				return err
			}
		}
		for _, c := range n.Clauses {
			if err := checkText(src, c); err != nil {
				return err
			}
		}
	case *render.TextNode:
		if i := strings.Index(n.Source, "{{"); i >= 0 {
			return textErr(src, n, i, "output")
		}
		if i := strings.Index(n.Source, "{%"); i >= 0 {
			return textErr(src, n, i, "tag")
		}
	}
	return nil
}

func textErr(src string, n *render.TextNode, i int, kind string) error {
	// Find the text node from the start of its line (text nodes carry the
	// line they start on, counted from 1).
	from := 0
	for line := 1; line < n.SourceLoc.LineNo; line++ {
		nl := strings.IndexByte(src[from:], '\n')
		if nl < 0 {
			break
		}
		from += nl + 1
	}
	at := strings.Index(src[from:], n.Source)
	if at < 0 {
		from, at = 0, max(strings.Index(src, n.Source), 0)
	}
	return syntaxErr(src, from+at+i, "cannot parse "+kind+" "+quote(excerpt(n.Source[i:])))
}

func quote(s string) string { return `"` + s + `"` }
