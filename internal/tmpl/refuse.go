package tmpl

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/osteele/liquid/render"
)

// RefusedError reports a construct a prompt may not use, refused when the
// template is parsed (so agent.Define refuses it): one that reaches
// outside the prompt (include, render, layout and block), or one this
// engine cannot render as LiquidJS does. Reason says what LiquidJS would do
// and what to write instead.
type RefusedError struct {
	Construct string
	Reason    string
	// Line is the 1-based line of the construct, 0 when the error is
	// wrapped with its location.
	Line int
}

// Error implements the error interface.
func (e *RefusedError) Error() string {
	msg := e.Construct + " is refused: " + e.Reason
	if e.Line > 0 {
		return fmt.Sprintf("Liquid error (line %d): %s", e.Line, msg)
	}
	return msg
}

// outsideTags are the tags that reach outside the prompt.
var outsideTags = map[string]string{
	"include": "it renders another template file, and a prompt has none (LiquidJS would read it from its file system and fail when the file is absent)",
	"render":  "it renders another template file, and a prompt has none (LiquidJS would read it from its file system and fail when the file is absent)",
	"layout":  "it renders the template inside another template file, and a prompt has none (LiquidJS would read it from its file system and fail when the file is absent)",
	"block":   "it only has a meaning inside a layout, which is refused (LiquidJS renders its body where it stands)",
}

var (
	quotedRE   = regexp.MustCompile(`"[^"]*"|'[^']*'`)
	emptyPipe  = regexp.MustCompile(`\|\s*(\||$)`)
	exponentRE = regexp.MustCompile(`(^|[^\w.])\d+(\.\d+)?[eE][+-]?\d+`)
	nilJSONRE  = regexp.MustCompile(`(^|[\s(,:])(nil|null)\s*\|\s*(json|jsonify|inspect)\b`)
)

// refuse returns a *RefusedError for the first refused construct of
// source, or nil. It reads the source once, with the tokenizer's rules.
func refuse(source string) error {
	i := 0
	for {
		j, end, content, isOutput, ok := nextClosed(source, i)
		if !ok {
			return nil
		}
		i = end + 2
		inner := strings.TrimSuffix(strings.TrimPrefix(content, "-"), "-")
		name := tagName(inner)
		if !isOutput {
			if why, ok := outsideTags[name]; ok {
				return &RefusedError{Line: lineOf(source, j), Construct: "{% " + name + " %}", Reason: why}
			}
			switch name {
			case "raw":
				k := findEndRaw(source, i)
				if k >= 0 && trimmedTag(source[k:]) {
					return &RefusedError{Line: lineOf(source, j), Construct: "a trimmed {%- endraw -%}", Reason: "LiquidJS does not end a raw block at an {% endraw %} with a trim marker (it fails: raw not closed); write {% endraw %}"}
				}
				if k >= 0 {
					i = k
				}
				continue
			case "comment":
				if k := strings.Index(source[i:], "endcomment"); k >= 0 {
					i += k
				}
				continue
			}
		}
		// Cheap tests first: most markup has none of these constructs.
		expr := inner
		if strings.ContainsAny(expr, `"'`) {
			expr = quotedRE.ReplaceAllString(inner, `""`)
		}
		if strings.IndexByte(expr, '|') >= 0 && emptyPipe.MatchString(strings.TrimSpace(expr)) {
			return &RefusedError{Line: lineOf(source, j), Construct: "an empty filter after |", Reason: "LiquidJS ignores it; remove the |"}
		}
		if strings.ContainsAny(expr, "eE") && strings.ContainsAny(expr, "0123456789") {
			if m := exponentRE.FindString(expr); m != "" {
				return &RefusedError{Line: lineOf(source, j), Construct: "the number " + strings.TrimLeft(m, " \t\r\n(,:=<>!|"), Reason: "LiquidJS reads a number with an exponent as a variable name (undefined); write it out"}
			}
		}
		if (strings.Contains(expr, "nil") || strings.Contains(expr, "null")) && nilJSONRE.MatchString(expr) {
			return &RefusedError{Line: lineOf(source, j), Construct: "the literal nil given to json", Reason: "LiquidJS's nil literal is an object there, printed {}; bind a variable to nil instead"}
		}
	}
}

// trimmedTag reports whether the tag src starts with has a trim marker.
func trimmedTag(src string) bool {
	e := strings.Index(src, "%}")
	return e >= 0 && (strings.HasPrefix(src, "{%-") || strings.HasSuffix(src[:e], "-"))
}

// refuseLoopSignal returns a *RefusedError when a break or continue stands
// in the body of a tablerow outside any for loop in it: LiquidJS does not
// stop the tablerow there, it skips the rest of the cell's body and, in the
// cells after it, everything after their first node.
func refuseLoopSignal(nodes []render.Node) error {
	for _, n := range nodes {
		switch n := n.(type) {
		case *render.TagNode:
			if n.Name == "break" || n.Name == "continue" {
				return &RefusedError{Construct: "{% " + n.Name + " %} in a tablerow", Reason: "LiquidJS does not stop the tablerow at it (it skips the rest of the cell, and in later cells all but their first node); use an if around the cell's body"}
			}
		case *render.BlockNode:
			if n.Name == "for" {
				continue
			}
			if err := refuseLoopSignal(n.Body); err != nil {
				return err
			}
			for _, c := range n.Clauses {
				if err := refuseLoopSignal(c.Body); err != nil {
					return err
				}
			}
		case *render.SeqNode:
			if err := refuseLoopSignal(n.Children); err != nil {
				return err
			}
		}
	}
	return nil
}
