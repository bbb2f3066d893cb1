package tmpl

import (
	"fmt"
	"strings"
)

// Source bounds, checked by CheckSource before a template is parsed: the
// parser's memory grows with the source and, much faster, with its nesting
// (1 MiB of nested parentheses took 634–890 MiB to parse).
//
//   - MaxSource: a template may not exceed 128 KiB;
//   - MaxDepth: blocks ({% if %}, {% for %}, {% capture %}, … inside one
//     another, {% liquid %} lines included) may not nest deeper than 32;
//   - MaxBrackets: brackets ("(" and "[" inside one expression: ranges,
//     indexes) may not nest deeper than 8, changes between "and" and "or"
//     in one condition counting as a level each (they are grouped from
//     the right, as in LiquidJS, with parentheses). The expression
//     parser's stack doubles with the depth (about 60 KiB per expression
//     at depth 30).
const (
	MaxSource   = 128 << 10
	MaxDepth    = 32
	MaxBrackets = 8
)

// SourceError reports a template past a source bound.
type SourceError struct {
	// Limit names the bound: "size", "depth" or "brackets".
	Limit string
	// Max is the bound's value; Line is the 1-based line where the depth
	// was passed (0 for size).
	Max, Line int
}

// Error implements the error interface.
func (e *SourceError) Error() string {
	switch e.Limit {
	case "size":
		return fmt.Sprintf("the template exceeds %d bytes", e.Max)
	case "brackets":
		return fmt.Sprintf("brackets nest deeper than %d in one expression (line %d)", e.Max, e.Line)
	}
	return fmt.Sprintf("blocks nest deeper than %d (line %d)", e.Max, e.Line)
}

// blockTags are the tags that open a block closed by "end" + name.
var blockTags = map[string]bool{
	"if": true, "unless": true, "case": true, "for": true, "tablerow": true,
	"capture": true, "comment": true, "raw": true,
}

// CheckSource checks source against MaxSource, MaxDepth and MaxBrackets. It reads the
// source once, with the tokenizer's rules (quoted strings skipped, raw
// blocks read verbatim); an unclosed delimiter ends the scan, for Parse to
// report.
func CheckSource(source string) error {
	if len(source) > MaxSource {
		return &SourceError{Limit: "size", Max: MaxSource}
	}
	depth := 0
	i := 0
	for {
		j, end, content, isOutput, ok := nextClosed(source, i)
		if !ok {
			return nil
		}
		if bracketDepth(content)+alternations(content) > MaxBrackets {
			return &SourceError{Limit: "brackets", Max: MaxBrackets, Line: lineOf(source, j)}
		}
		i = end + 2
		if isOutput {
			continue
		}
		name := tagName(content)
		if name == "liquid" {
			for _, line := range strings.Split(content, "\n") {
				depth = nest(depth, tagName(line))
				if depth > MaxDepth {
					return depthErr(source, j)
				}
			}
			continue
		}
		depth = nest(depth, name)
		if depth > MaxDepth {
			return depthErr(source, j)
		}
		if name == "raw" {
			k := findEndRaw(source, i)
			if k < 0 {
				return nil
			}
			i = k
		}
	}
}

// nest returns the block depth after a tag named name.
func nest(depth int, name string) int {
	switch {
	case blockTags[name]:
		return depth + 1
	case strings.HasPrefix(name, "end") && blockTags[name[3:]]:
		return max(depth-1, 0)
	}
	return depth
}

// bracketDepth returns how deep "(" and "[" nest in an expression, quoted
// strings skipped.
func bracketDepth(expr string) int {
	depth, deepest := 0, 0
	for k := 0; k < len(expr); k++ {
		switch c := expr[k]; c {
		case '"', '\'':
			q := strings.IndexByte(expr[k+1:], c)
			if q < 0 {
				return deepest
			}
			k += q + 1
		case '(', '[':
			depth++
			deepest = max(deepest, depth)
		case ')', ']':
			depth = max(depth-1, 0)
		}
	}
	return deepest
}

func depthErr(src string, at int) error {
	return &SourceError{Limit: "depth", Max: MaxDepth, Line: lineOf(src, at)}
}

func lineOf(src string, at int) int { return 1 + strings.Count(src[:at], "\n") }
