// Package semverx parses exact semantic versions and npm-style version
// ranges with npm's rules, on top of github.com/Masterminds/semver/v3.
//
// Masterminds supplies the Version type, its parsing of exact versions and
// its precedence order (Version.Compare). Ranges are parsed here, because
// Masterminds' Constraints differ from npm's ranges in ways that change
// which version a tool reference resolves to; see ParseRange for the
// grammar and the list of differences.
package semverx

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// MaxNumber is the largest major, minor or patch number accepted, npm's
// Number.MAX_SAFE_INTEGER (2^53-1). Larger numbers are rejected, as npm
// rejects them.
const MaxNumber = 1<<53 - 1

// MaxVersionLength is the longest exact version accepted, in bytes (npm's
// and Masterminds' limit).
const MaxVersionLength = 256

// SyntaxError reports a version or a range that does not parse. Input is
// the text given; Reason says what is wrong with it in words a person can
// act on.
type SyntaxError struct {
	Input  string
	Reason string
}

// Error returns the input and the reason.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%q: %s", e.Input, e.Reason)
}

// ParseVersion parses an exact semantic version (semver 2.0.0):
// MAJOR.MINOR.PATCH with an optional -PRERELEASE and +BUILD, no "v" or "="
// prefix, no leading zeros in numbers or numeric prerelease identifiers, no
// missing part, no range syntax. Numbers are at most MaxNumber and the whole
// version at most MaxVersionLength bytes. The error is a *SyntaxError.
func ParseVersion(s string) (*semver.Version, error) {
	if reason := checkVersion(s); reason != "" {
		return nil, &SyntaxError{Input: s, Reason: reason}
	}
	v, err := semver.StrictNewVersion(s)
	if err != nil {
		// checkVersion accepts a subset of what StrictNewVersion accepts;
		// keep the library's reason should that ever not hold.
		return nil, &SyntaxError{Input: s, Reason: err.Error()}
	}
	return v, nil
}

// checkVersion returns why s is not an exact version, or "".
func checkVersion(s string) string {
	switch {
	case s == "":
		return "a version is required, such as 1.0.0"
	case len(s) > MaxVersionLength:
		return fmt.Sprintf("a version is at most %d characters", MaxVersionLength)
	case strings.TrimSpace(s) != s:
		return "remove the spaces around the version"
	case s[0] == 'v' || s[0] == 'V' || s[0] == '=':
		return fmt.Sprintf("write the version without the %q prefix, as %s", s[:1], s[1:])
	case strings.ContainsAny(s[:1], "<>~^*") || strings.Contains(s, "||") || strings.Contains(s, " "):
		return "an exact version is required here, not a range (for example 1.2.3)"
	}
	p := parser{s: s}
	var nums [3]string
	for i := range nums {
		if i > 0 {
			if !p.eat('.') {
				return "an exact version needs all three parts, MAJOR.MINOR.PATCH (for example 1.0.0)"
			}
		}
		tok := p.digits()
		if tok == "" {
			if p.peekX() {
				return "an exact version has no wildcard (x, X or *); give every part as a number"
			}
			if p.done() {
				return "an exact version needs all three parts, MAJOR.MINOR.PATCH (for example 1.0.0)"
			}
			return fmt.Sprintf("%s must be a number, found %q", partNames[i], p.rest())
		}
		if reason := checkNumber(tok, partNames[i]); reason != "" {
			return reason
		}
		nums[i] = tok
	}
	if p.eat('-') {
		if reason := checkIdentifiers(p.until('+'), "prerelease"); reason != "" {
			return reason
		}
	}
	if p.eat('+') {
		if reason := checkIdentifiers(p.rest(), "build"); reason != "" {
			return reason
		}
		p.i = len(p.s)
	}
	if !p.done() {
		if p.peek() == '.' {
			return "an exact version has exactly three numbers, MAJOR.MINOR.PATCH"
		}
		return fmt.Sprintf("unexpected %q after %s.%s.%s", p.rest(), nums[0], nums[1], nums[2])
	}
	return ""
}

var partNames = [3]string{"major", "minor", "patch"}

// checkNumber checks a numeric identifier: no leading zero, at most
// MaxNumber.
func checkNumber(tok, what string) string {
	if len(tok) > 1 && tok[0] == '0' {
		return fmt.Sprintf("%s %s has a leading zero; write %s", what, tok, strings.TrimLeft(tok, "0")+zeroIfEmpty(tok))
	}
	if len(tok) > 16 || parseNumber(tok) > MaxNumber {
		return fmt.Sprintf("%s %s is larger than %d", what, tok, uint64(MaxNumber))
	}
	return ""
}

func zeroIfEmpty(tok string) string {
	if strings.TrimLeft(tok, "0") == "" {
		return "0"
	}
	return ""
}

// parseNumber converts a string of at most 16 ASCII digits.
func parseNumber(tok string) uint64 {
	var n uint64
	for i := 0; i < len(tok); i++ {
		n = n*10 + uint64(tok[i]-'0')
	}
	return n
}

// checkIdentifiers checks the dot-separated prerelease or build identifiers
// of s: non-empty, [0-9A-Za-z-]; numeric prerelease identifiers have no
// leading zero.
func checkIdentifiers(s, what string) string {
	if s == "" {
		return fmt.Sprintf("the %s after %q is empty", what, map[string]string{"prerelease": "-", "build": "+"}[what])
	}
	for rest, more := s, true; more; {
		var id string
		id, rest, more = strings.Cut(rest, ".")
		if id == "" {
			return fmt.Sprintf("%s %q has an empty identifier", what, s)
		}
		numeric := true
		for i := 0; i < len(id); i++ {
			b := id[i]
			switch {
			case b >= '0' && b <= '9':
			case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b == '-':
				numeric = false
			default:
				return fmt.Sprintf("%s identifier %q has %q; use only letters, digits and '-'", what, id, string(rune(b)))
			}
		}
		if what == "prerelease" && numeric && len(id) > 1 && id[0] == '0' {
			return fmt.Sprintf("numeric prerelease identifier %q has a leading zero", id)
		}
	}
	return ""
}

// parser is a cursor over an ASCII string.
type parser struct {
	s string
	i int
}

func (p *parser) done() bool { return p.i >= len(p.s) }

func (p *parser) peek() byte {
	if p.done() {
		return 0
	}
	return p.s[p.i]
}

func (p *parser) peekX() bool {
	b := p.peek()
	return b == 'x' || b == 'X' || b == '*'
}

func (p *parser) eat(b byte) bool {
	if p.peek() == b && !p.done() {
		p.i++
		return true
	}
	return false
}

func (p *parser) digits() string {
	start := p.i
	for !p.done() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	return p.s[start:p.i]
}

// until returns the text up to (not including) the first b, or the rest.
func (p *parser) until(b byte) string {
	start := p.i
	for !p.done() && p.s[p.i] != b {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *parser) rest() string { return p.s[p.i:] }
