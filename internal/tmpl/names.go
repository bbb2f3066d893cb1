package tmpl

import "strings"

// exprKeywords are words of the expression language that are not variables.
var exprKeywords = map[string]bool{
	"and": true, "or": true, "contains": true, "true": true, "false": true,
	"nil": true, "in": true, "reversed": true,
}

// unsupportedLiterals are LiquidJS literals osteele/liquid does not have: it
// would read them as variables. A template that uses one is rejected.
var unsupportedLiterals = map[string]string{}

// exprRefs scans a Liquid expression and returns the variables it reads,
// each as its dotted path (["firm", "city"] for firm.city; a path stops at
// an index such as xs[0]), in order and without duplicates, and the names of
// the filters it applies. It skips string literals, numbers, properties (after
// "."), keyword arguments ("limit: 2", "allow_false: true") and the
// keywords of the language.
func exprRefs(expr string) (vars [][]string, filterNames []string) {
	vars, _, filterNames = scanExpr(expr)
	return vars, filterNames
}

// scanExpr is exprRefs that also returns every occurrence of a variable
// (all, duplicates included): what the work meter charges.
func scanExpr(expr string) (vars, all [][]string, filterNames []string) {
	seen := map[string]bool{}
	prev := byte(0) // the last significant character or token class
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case isExprSpace(c):
			i++
		case c == '"' || c == '\'':
			j := quotedEnd(expr, i)
			if j < 0 {
				return vars, all, filterNames
			}
			i = j
			prev = 's'
		case c >= '0' && c <= '9' || c == '-' && i+1 < len(expr) && expr[i+1] >= '0' && expr[i+1] <= '9' && prev != 'i':
			i++
			for i < len(expr) && (expr[i] >= '0' && expr[i] <= '9' || expr[i] == '.' && i+1 < len(expr) && expr[i+1] >= '0' && expr[i+1] <= '9') {
				i++
			}
			prev = 'n'
		case isIdentStart(c):
			j := identEnd(expr, i)
			name := expr[i:j]
			k := j
			for k < len(expr) && isExprSpace(expr[k]) {
				k++
			}
			keywordArg := k < len(expr) && expr[k] == ':'
			switch {
			case prev == '|':
				filterNames = append(filterNames, name)
			case prev == '.', keywordArg, exprKeywords[name]:
			default:
				path := []string{name}
				// Follow ".property" segments (not "..", the range operator).
				for j+1 < len(expr) && expr[j] == '.' && expr[j+1] != '.' && isIdentStart(expr[j+1]) {
					k := identEnd(expr, j+1)
					path = append(path, expr[j+1:k])
					j = k
				}
				all = append(all, path)
				if key := strings.Join(path, "."); !seen[key] {
					seen[key] = true
					vars = append(vars, path)
				}
			}
			i = j
			prev = 'i'
		case c == '.':
			if i+1 < len(expr) && expr[i+1] == '.' {
				i += 2
				prev = 'r'
				continue
			}
			i++
			prev = '.'
		default:
			i++
			prev = c
		}
	}
	return vars, all, filterNames
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// identEnd returns the index just past the identifier that starts at
// expr[i]: word bytes and dashes, and one trailing '?'.
func identEnd(expr string, i int) int {
	j := i + 1
	for j < len(expr) && (isWordByte(expr[j]) || expr[j] == '-') {
		j++
	}
	if j < len(expr) && expr[j] == '?' {
		j++
	}
	return j
}

// isExprSpace reports the white space between an expression's tokens.
func isExprSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// quotedEnd returns the index just past the string literal whose quote
// is expr[i], or -1 when the literal is not closed.
func quotedEnd(expr string, i int) int {
	j := strings.IndexByte(expr[i+1:], expr[i])
	if j < 0 {
		return -1
	}
	return i + j + 2
}

// tagRefs returns the variables and filters a tag's arguments read.
func tagRefs(name, args string) (vars [][]string, filterNames []string) {
	vars, _, filterNames = tagScan(name, args)
	return vars, filterNames
}

// tagScan is tagRefs that also returns every occurrence of a variable.
func tagScan(name, args string) (vars, all [][]string, filterNames []string) {
	switch name {
	case "if", "elsif", "unless", "case", "when", "echo", "cycle":
		return scanExpr(args)
	case "for", "tablerow":
		// "item in collection …": skip the loop variable and "in".
		rest := strings.TrimLeft(args, " \t\r\n")
		n := 0
		for n < len(rest) && (isWordByte(rest[n]) || rest[n] == '-') {
			n++
		}
		return scanExpr(rest[n:])
	case "assign":
		if i := strings.IndexByte(args, '='); i >= 0 {
			return scanExpr(args[i+1:])
		}
	}
	return nil, nil, nil
}
