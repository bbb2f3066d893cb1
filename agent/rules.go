package agent

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kindgi/agents/internal/semverx"
	"github.com/kindgi/agents/internal/tmpl"
)

// idPattern is the syntax of agent and tool ids: lowercase letters, digits,
// '.', '_' and '-', starting with a letter or digit.
var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// identPattern is the syntax of a prompt parameter name: an identifier a
// Liquid template can refer to.
var identPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reservedNames are injected into every render (prompt.AutoInjectedVars);
// a parameter cannot take them.
var reservedNames = []string{"today", "now", "agent", "conversation"}

// Ranges of the numeric fields Define checks that have no other bound
// (maxSteps, limit and the rest are bounded next to their defaults). Every
// value Define accepts works in a turn: maxWallMs and hitl.timeoutMs take
// any positive int64 (the turn saturates durations at about 292 years),
// afterTurns and hitlAfterTurns any positive int.
const (
	// MaxHistoryLimit is the largest historyLimit: prior messages loaded
	// into one prompt.
	MaxHistoryLimit = 10000
	// MaxAutoCloseSeconds is the largest autoCloseAfterInactiveSeconds:
	// 100 years, so that it fits a time.Duration.
	MaxAutoCloseSeconds = 100 * 365 * 24 * 60 * 60
)

const idSyntax = "lowercase letters, digits, '.', '_' and '-', starting with a letter or digit, at most 128 characters"

// quote quotes s for a message, shortened to 64 runes so that a long value
// does not drown the message.
func quote(s string) string {
	const max = 64
	if utf8.RuneCountInString(s) <= max {
		return strconv.Quote(s)
	}
	n := 0
	for i := range s {
		if n == max {
			return strconv.Quote(s[:i]) + "…"
		}
		n++
	}
	return strconv.Quote(s)
}

// idProblem returns what is wrong with an agent or tool id, or "".
func idProblem(s, what, example string) string {
	switch {
	case s == "":
		return fmt.Sprintf("%s is required: use %s (for example %s)", what, idSyntax, example)
	case len(s) > MaxIDLength:
		return fmt.Sprintf("%s is %d characters long; at most %d are allowed", what, len(s), MaxIDLength)
	case !idPattern.MatchString(s):
		return fmt.Sprintf("%s %s is invalid: use %s (for example %s)", what, quote(s), idSyntax, example)
	}
	return ""
}

// isBlank reports whether s has nothing but white space.
func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

// id checks the agent id.
func (c *checker) id(path, s string) {
	if m := idProblem(s, "id", "acme.contract-drafter"); m != "" {
		c.add(path, m)
	}
}

// version checks the agent version: exact semver 2.0.0.
func (c *checker) version(s string) {
	if s == "" {
		c.add("version", "version is required: an exact semantic version such as 1.0.0")
		return
	}
	if err := checkExactVersion(s); err != nil {
		c.add("version", fmt.Sprintf("version %s is not an exact semantic version (MAJOR.MINOR.PATCH with an optional -prerelease and +build, such as 1.0.0 or 2.1.0-beta.1): %s", quote(s), reason(err)))
	}
}

// nonBlank reports message at path when s is empty or white space, and
// checks that s is valid UTF-8.
func (c *checker) nonBlank(path, s, message string) {
	if isBlank(s) {
		c.add(path, message)
		return
	}
	c.utf8(path, s)
}

// utf8 reports a string that is not valid UTF-8: JSON cannot carry it
// unchanged, so the agent would not round-trip.
func (c *checker) utf8(path, s string) {
	if !utf8.ValidString(s) {
		c.add(path, "must be valid UTF-8 text")
	}
}

// instructions checks that the instructions are present and parse as a
// Liquid template.
func (c *checker) instructions(s string) {
	if isBlank(s) {
		c.add("instructions", "instructions are required: write the system prompt as a Liquid template, such as \"You draft contract clauses for {{ firmName }}.\"")
		return
	}
	if !utf8.ValidString(s) {
		c.add("instructions", "must be valid UTF-8 text")
		return
	}
	if msg := checkInstructionBounds(s); msg != "" {
		c.add("instructions", msg)
		return
	}
	if err := checkTemplate(s); err != nil {
		c.add("instructions", "instructions do not parse as a Liquid template: "+err.Error())
	}
}

// parameters checks the prompt parameters and returns their copy with
// defaults in JSON form (nil when there are none).
func (c *checker) parameters(ps []PromptParameter) []PromptParameter {
	if len(ps) == 0 {
		return nil
	}
	out := make([]PromptParameter, len(ps))
	names := newDupFinder(len(ps))
	for i, p := range ps {
		c.parameterName(p.Name, i, &names)
		typeOK := true
		switch p.Type {
		case TypeString, TypeNumber, TypeInteger, TypeBoolean, TypeObject, TypeArray:
		case "":
			typeOK = false
			c.add(at("parameters", i, "type"), "type is required: one of string, number, integer, boolean, object, array")
		default:
			typeOK = false
			c.add(at("parameters", i, "type"), fmt.Sprintf("type %s is not one of string, number, integer, boolean, object, array", quote(p.Type)))
		}
		c.utf8(at("parameters", i, "description"), p.Description)
		def, err := canonicalJSON(p.Default)
		switch {
		case err != nil:
			c.add(at("parameters", i, "default"), "default is not a JSON value: "+err.Error())
		case typeOK && def != nil:
			if m := fitsType(def, p.Type); m != "" {
				c.add(at("parameters", i, "default"), m)
			}
		}
		out[i] = PromptParameter{Name: p.Name, Type: p.Type, Optional: p.Optional, Default: def, Description: p.Description}
	}
	return out
}

// parameterName checks the name of parameter i: an identifier, not
// reserved, not taken by an earlier parameter.
func (c *checker) parameterName(name string, i int, names *dupFinder) {
	switch {
	case name == "":
		c.add(at("parameters", i, "name"), "name is required: an identifier of letters, digits and '_' that does not start with a digit (for example firmName)")
		return
	case !identPattern.MatchString(name):
		c.add(at("parameters", i, "name"), fmt.Sprintf("name %s is not an identifier: use letters, digits and '_', not starting with a digit (for example firmName)", quote(name)))
		return
	}
	for _, r := range reservedNames {
		if name == r {
			c.add(at("parameters", i, "name"), fmt.Sprintf("name %s is reserved: today, now, agent and conversation are injected into every render; choose another name", quote(name)))
			return
		}
	}
	if j, dup := names.seen(name, i); dup {
		c.add(at("parameters", i, "name"), fmt.Sprintf("parameter %s is declared twice (first at %s); declare each parameter once", quote(name), at("parameters", j, "")))
	}
}

// dupFinder remembers the first index of each key of a list.
type dupFinder struct {
	m map[string]int
}

// newDupFinder returns a finder for a list of n entries; a list of one
// entry needs no map.
func newDupFinder(n int) dupFinder {
	if n < 2 {
		return dupFinder{}
	}
	return dupFinder{m: make(map[string]int, n)}
}

// seen records key at index i and reports the index of its first
// occurrence when it was seen before.
func (d *dupFinder) seen(key string, i int) (int, bool) {
	if d.m == nil {
		return 0, false
	}
	if j, ok := d.m[key]; ok {
		return j, true
	}
	d.m[key] = i
	return 0, false
}

// checkExactVersion reports whether s is an exact Semantic Versioning 2.0.0
// version, with the parser the agent registry orders versions by, so that
// every version Define accepts can be registered. semverx.ParseVersion runs
// semver.StrictNewVersion and also checks the grammar of semver.org itself
// (empty identifiers, leading zeros in numeric prerelease identifiers,
// characters outside [0-9A-Za-z-]), so nothing Masterminds admits beyond
// SemVer 2.0.0 gets through. Like npm, it caps numbers at 2^53-1.
func checkExactVersion(s string) error {
	_, err := semverx.ParseVersion(s)
	return err
}

// checkRange reports whether s is a valid npm-style version range, with
// the parser registry.ResolveVersion resolves tool references with.
func checkRange(s string) error {
	_, err := semverx.ParseRange(s)
	return err
}

// checkTemplate reports whether s parses as a Liquid template, with the
// engine configuration prompt.Render uses: what Define accepts, Render can
// parse.
func checkTemplate(s string) error { return tmpl.Check(s) }

// reason returns the words of a semverx error without its quoted input,
// which the issue message already shows.
func reason(err error) string {
	if se, ok := errors.AsType[*semverx.SyntaxError](err); ok {
		return se.Reason
	}
	return err.Error()
}
