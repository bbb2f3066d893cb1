package tmpl

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/osteele/liquid/parser"
)

// SyntaxError is a template syntax problem found before osteele/liquid sees
// the source: an unclosed "{{" or "{%", or delimiters the engine would
// otherwise pass through as text. Line and Col are 1-based.
type SyntaxError struct {
	Line, Col int
	Message   string
}

// Error implements the error interface.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("Liquid syntax error (line %d, col %d): %s", e.Line, e.Col, e.Message)
}

// normalize tokenizes source the way LiquidJS does and returns the source
// osteele/liquid should parse.
//
// LiquidJS reads "{{" up to the next "}}" and "{%" up to the next "%}",
// skipping quoted strings, and fails when the closing delimiter never comes;
// the content of {% raw %}…{% endraw %} is read verbatim. osteele/liquid
// instead leaves an unclosed "{{" or "{%" in the output as text, and does not
// recognise an output "{{ … }}" that spans lines. normalize rejects the first
// and rewrites the line breaks inside an output (outside quoted strings) to
// spaces, which LiquidJS treats the same way. A line break inside a quoted
// string of an output is rejected: osteele/liquid cannot read it.
func normalize(src string) (string, error) {
	var b []byte      // copy-on-write: nil while the source is unchanged
	var endraws []int // offsets of the {% endraw %} tags LiquidJS reads
	i := 0
	for {
		j, end, isOutput, quoteErr := nextMarkup(src, i)
		if j < 0 {
			break
		}
		if end < 0 {
			kind := "tag"
			if isOutput {
				kind = "output"
			}
			msg := fmt.Sprintf("%s %q not closed", kind, excerpt(src[j:]))
			if quoteErr {
				msg = fmt.Sprintf("%s %q not closed (unterminated quoted string)", kind, excerpt(src[j:]))
			}
			return "", syntaxErr(src, j, msg)
		}
		if isOutput {
			for k := j + 2; k < end; k++ {
				c := src[k]
				if c == '"' || c == '\'' {
					q := strings.IndexByte(src[k+1:end], c)
					if nl := strings.IndexByte(src[k+1:k+1+q], '\n'); nl >= 0 {
						return "", syntaxErr(src, k+1+nl, "line break inside a quoted string of an output")
					}
					k += q + 1
					continue
				}
				if c == '\n' {
					if b == nil {
						b = []byte(src)
					}
					b[k] = ' '
				}
			}
			i = end + 2
			continue
		}
		i = end + 2
		if tagName(src[j+2:end]) == "raw" {
			// Read verbatim up to {% endraw %}.
			k := findEndRaw(src, i)
			if k < 0 {
				return "", syntaxErr(src, j, fmt.Sprintf("raw %q not closed", excerpt(src[j:])))
			}
			endraws = append(endraws, k)
			i = k
		}
	}
	out := src
	if b != nil {
		out = string(b)
	}
	if err := checkRaw(out, endraws); err != nil {
		return "", err
	}
	return out, nil
}

// checkRaw makes sure osteele/liquid ends each raw block where LiquidJS
// does. Its tokenizer does not know raw: an unclosed "{{" inside a raw block
// pairs with a "}}" after {% endraw %} and swallows the end tag, which would
// render the rest of the line as raw text. Such a template is rejected.
func checkRaw(src string, endraws []int) error {
	if len(endraws) == 0 {
		return nil
	}
	starts := map[int]bool{}
	at := 0
	for _, tok := range parser.Scan(src, parser.SourceLoc{}, nil) {
		if tok.Type == parser.TagTokenType && tok.Name == "endraw" {
			starts[at] = true
		}
		at += len(tok.Source)
	}
	for _, k := range endraws {
		if !starts[k] {
			return syntaxErr(src, k, `the engine cannot find this {% endraw %}: a "{{" or "{%" inside the raw block pairs with a later "}}" or "%}"; close it inside the block or move it out`)
		}
	}
	return nil
}

// nextOpen returns the index of the next "{{" or "{%" at or after i, or -1.
func nextOpen(src string, i int) int {
	for {
		k := strings.IndexByte(src[i:], '{')
		if k < 0 || i+k+1 >= len(src) {
			return -1
		}
		i += k
		if src[i+1] == '{' || src[i+1] == '%' {
			return i
		}
		i++
	}
}

// nextMarkup finds the next markup at or after i: the index j of its
// "{{" or "{%" (-1: none), the index end of its "}}" or "%}" (-1: it is
// not closed, quoteErr telling that an unterminated quote ran to the end),
// and whether it is an output ("{{").
func nextMarkup(src string, i int) (j, end int, isOutput, quoteErr bool) {
	j = nextOpen(src, i)
	if j < 0 {
		return -1, -1, false, false
	}
	isOutput = src[j+1] == '{'
	closer := "%}"
	if isOutput {
		closer = "}}"
	}
	end, quoteErr = findClose(src, j+2, closer)
	return j, end, isOutput, quoteErr
}

// nextClosed is nextMarkup for the scans that stop at the end of src or
// at the first markup left unclosed (normalize reports it): ok is false
// there, and content is what stands between the delimiters.
func nextClosed(src string, i int) (j, end int, content string, isOutput, ok bool) {
	j, end, isOutput, _ = nextMarkup(src, i)
	if j < 0 || end < 0 {
		return j, end, "", isOutput, false
	}
	return j, end, src[j+2 : end], isOutput, true
}

// findClose returns the index of closer at or after i, skipping quoted
// strings, or -1. quoteErr reports that an unterminated quote ran to the end.
func findClose(src string, i int, closer string) (end int, quoteErr bool) {
	for i < len(src) {
		c := src[i]
		if c == '"' || c == '\'' {
			q := strings.IndexByte(src[i+1:], c)
			if q < 0 {
				return -1, true
			}
			i += q + 2
			continue
		}
		if strings.HasPrefix(src[i:], closer) {
			return i, false
		}
		i++
	}
	return -1, false
}

// tagName returns the name of a tag from its content between "{%" and "%}".
func tagName(content string) string {
	content = strings.TrimPrefix(content, "-")
	content = strings.TrimLeft(content, " \t\r\n")
	n := 0
	for n < len(content) && isWordByte(content[n]) {
		n++
	}
	return content[:n]
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// findEndRaw returns the index of the "{%" of the first {% endraw %} at or
// after i, or -1.
func findEndRaw(src string, i int) int {
	for {
		j := strings.Index(src[i:], "{%")
		if j < 0 {
			return -1
		}
		j += i
		end := strings.Index(src[j+2:], "%}")
		if end < 0 {
			return -1
		}
		inner := strings.TrimSuffix(src[j+2:j+2+end], "-")
		if tagName(inner) == "endraw" && strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(inner, "-")), "endraw")) == "" {
			return j
		}
		i = j + 2
	}
}

// excerpt returns the start of s for a message: up to the first line
// break, at most 24 bytes, cut on a rune boundary.
func excerpt(s string) string {
	const max = 24
	if nl := strings.IndexByte(s, '\n'); nl >= 0 && nl < max {
		return s[:nl]
	}
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func syntaxErr(src string, at int, msg string) *SyntaxError {
	line := 1 + strings.Count(src[:at], "\n")
	col := at - strings.LastIndexByte(src[:at], '\n')
	return &SyntaxError{Line: line, Col: col, Message: msg}
}
