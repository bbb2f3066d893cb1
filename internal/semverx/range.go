package semverx

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// Range is a parsed npm-style version range: a union (||) of comparator
// sets, each an intersection of primitive comparators. The zero Range
// matches nothing; ParseRange("") matches every release. A Range is
// immutable and safe for concurrent use.
type Range struct {
	raw  string
	sets [][]comparator
}

// op is a primitive comparison.
type op uint8

const (
	opAny op = iota // matches every version; v is nil
	opEQ
	opLT
	opLE
	opGT
	opGE
)

var opText = [...]string{opAny: "", opEQ: "", opLT: "<", opLE: "<=", opGT: ">", opGE: ">="}

// comparator is one primitive comparison against a version.
type comparator struct {
	op op
	v  *semver.Version
}

// String returns the comparator in npm's form: ">=1.2.3", "1.2.3" for
// equality, "" for any.
func (c comparator) String() string {
	if c.op == opAny {
		return ""
	}
	return opText[c.op] + c.v.String()
}

func (c comparator) test(v *semver.Version) bool {
	if c.op == opAny {
		return true
	}
	d := v.Compare(c.v)
	switch c.op {
	case opEQ:
		return d == 0
	case opLT:
		return d < 0
	case opLE:
		return d <= 0
	case opGT:
		return d > 0
	default:
		return d >= 0
	}
}

// isNull reports the comparator npm uses for "nothing matches", <0.0.0-0.
func (c comparator) isNull() bool {
	return c.op == opLT && c.v.Major() == 0 && c.v.Minor() == 0 && c.v.Patch() == 0 && c.v.Prerelease() == "0"
}

// isGTE0 reports >=0.0.0, which npm replaces by "*".
func (c comparator) isGTE0() bool {
	return c.op == opGE && c.v.Major() == 0 && c.v.Minor() == 0 && c.v.Patch() == 0 && c.v.Prerelease() == ""
}

// ParseRange parses an npm-style range with the rules of npm's node-semver
// (v7, options loose and includePrerelease both false):
//
//	range-set  ::= range ( '||' range )*        spaces around || are free
//	range      ::= hyphen | simple ( ' ' simple )* | ''
//	hyphen     ::= partial ' - ' partial
//	simple     ::= primitive | partial | tilde | caret
//	primitive  ::= ( '<' | '>' | '>=' | '<=' | '=' ) partial
//	tilde      ::= ( '~' | '~>' ) partial
//	caret      ::= '^' partial
//	partial    ::= 'v'? xr ( '.' xr ( '.' xr qualifier? )? )?
//	xr         ::= 'x' | 'X' | '*' | nr           nr: 0 or no leading zero
//	qualifier  ::= ( '-' pre )? ( '+' build )?
//
// An operator may be separated from its version by spaces (">= 1.2.3").
// The empty range, "*" and "x" match every release. Build metadata is
// ignored; a prerelease given on a partial with a wildcard is ignored, as in
// npm. The desugaring is npm's: ~1.2.3 is >=1.2.3 <1.3.0-0, ^0.2.3 is
// >=0.2.3 <0.3.0-0, ^0.0.3 is >=0.0.3 <0.0.4-0, 1.x is >=1.0.0 <2.0.0-0,
// 1.2.3 - 2.3 is >=1.2.3 <2.4.0-0, and so on (see Range.Canonical).
//
// A prerelease version matches a comparator set only when the set holds a
// comparator whose version is a prerelease of the same major.minor.patch:
// ^1.2.3-beta.2 matches 1.2.3-beta.4 but not 1.2.4-beta.1.
//
// # Differences from Masterminds/semver Constraints
//
// Masterminds' NewConstraint/Check is not used because it differs from npm
// on every point below (each has a test in masterminds_test.go that shows
// Masterminds still behaving so and this package behaving like npm):
//
//  1. Prereleases: once one comparator of a set names a prerelease,
//     Masterminds admits prereleases of every version in the set's bounds
//     (>1.2.3-alpha.3 admits 3.4.5-alpha.9, ^1.2.3-beta.2 admits
//     1.2.4-beta.1, ~1.2.3-beta.2 admits 1.2.4-rc.1); npm admits only
//     prereleases of the named major.minor.patch.
//  2. Commas: Masterminds accepts ">=1.0.0, <2.0.0"; npm rejects commas.
//  3. Leading zeros: Masterminds accepts "01.2.3" and "1.02"; npm rejects.
//  4. The empty range: Masterminds rejects ""; npm reads it as "*".
//  5. An empty side of ||: Masterminds rejects "1.2.3 ||"; npm reads the
//     empty side as "*".
//  6. Operators: Masterminds accepts "!=", "=>" and "=<"; npm has none of
//     them.
//  7. ~0.0.0: Masterminds matches every version; npm reads it as
//     >=0.0.0 <0.1.0-0.
//  8. A prerelease on a partial with a wildcard: Masterminds keeps it and
//     so admits prereleases ("1.2.x-beta" admits 1.2.5-alpha); npm drops it
//     ("1.2.x-beta" is >=1.2.0 <1.3.0-0 and admits no prerelease).
//  9. A set that is "*" next to another set: npm collapses the whole range
//     to "*" ("1.2.3-beta || *" does not match 1.2.3-beta); Masterminds
//     keeps both sets.
//  10. Large numbers: Masterminds accepts numbers up to 2^64-1; npm rejects
//     numbers above 2^53-1 (MaxNumber).
//  11. Limits: Masterminds rejects ranges longer than 512 bytes or with more
//     than 32 || groups; npm has no such limits, nor has this parser (it
//     runs in time linear in the input).
//
// This parser is slightly stricter than npm about prefixes: a partial may
// carry one "v" ("^v1.2.3", ">=v1.0.0", "=v1.2.3"), but not npm's runs of
// "v" and "=" ("==1.2.3", "^=1.2.3", "=1.2.3 - 2"), which are rejected.
//
// The error is a *SyntaxError.
func ParseRange(s string) (Range, error) {
	raw := strings.Join(strings.Fields(s), " ")
	parts := strings.Split(s, "||")
	sets := make([][]comparator, 0, len(parts))
	for _, part := range parts {
		set, err := parseSet(strings.Fields(part))
		if err != nil {
			return Range{}, &SyntaxError{Input: s, Reason: err.Error()}
		}
		sets = append(sets, set)
	}
	return Range{raw: raw, sets: simplify(sets)}, nil
}

// simplify applies npm's set-level rules: null sets are dropped when
// another set exists, and a set that is exactly "*" makes the range "*".
func simplify(sets [][]comparator) [][]comparator {
	if len(sets) <= 1 {
		return sets
	}
	kept := sets[:0:0]
	for _, set := range sets {
		if !set[0].isNull() {
			kept = append(kept, set)
		}
	}
	if len(kept) == 0 {
		return sets[:1]
	}
	if len(kept) > 1 {
		for _, set := range kept {
			if len(set) == 1 && set[0].op == opAny {
				return [][]comparator{set}
			}
		}
	}
	return kept
}

// parseSet parses the whitespace-separated fields of one comparator set.
func parseSet(fields []string) ([]comparator, error) {
	var out []comparator
	if len(fields) == 3 && fields[1] == "-" {
		cs, err := hyphen(fields[0], fields[2])
		if err != nil {
			return nil, err
		}
		out = cs
	} else {
		for i := 0; i < len(fields); i++ {
			f := fields[i]
			if isOperator(f) {
				if i+1 == len(fields) {
					return nil, fmt.Errorf("operator %q has no version after it", f)
				}
				i++
				f += fields[i]
			}
			cs, err := simple(f)
			if err != nil {
				return nil, err
			}
			out = append(out, cs...)
		}
	}
	return normalizeSet(out), nil
}

// normalizeSet applies npm's rules within a set: >=0.0.0 is "*", a null
// comparator makes the whole set null, "*" is dropped next to other
// comparators, and duplicates are dropped.
func normalizeSet(cs []comparator) []comparator {
	if len(cs) == 0 {
		return []comparator{{op: opAny}}
	}
	out := cs[:0:0]
	type key struct {
		op                  op
		major, minor, patch uint64
		pre                 string
	}
	seen := make(map[key]bool, len(cs))
	for _, c := range cs {
		if c.isGTE0() {
			c = anyComparator // npm's replaceGTE0: >=0.0.0 is "*"
		}
		if c.isNull() {
			return []comparator{c}
		}
		k := key{op: c.op}
		if c.op != opAny {
			k = key{c.op, c.v.Major(), c.v.Minor(), c.v.Patch(), c.v.Prerelease()}
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, c)
		}
	}
	if len(out) > 1 {
		filtered := out[:0]
		for _, c := range out {
			if c.op != opAny {
				filtered = append(filtered, c)
			}
		}
		out = filtered
	}
	return out
}

func isOperator(f string) bool {
	switch f {
	case "<", ">", "<=", ">=", "=", "~", "~>", "^":
		return true
	}
	return false
}

// simple parses one primitive, partial, tilde or caret comparator and
// returns its desugared comparators.
func simple(f string) ([]comparator, error) {
	kind, rest := splitOperator(f)
	if rest == "" {
		return nil, fmt.Errorf("operator %q has no version after it", kind)
	}
	p, err := parsePartial(rest)
	if err != nil {
		return nil, err
	}
	switch kind {
	case "~", "~>":
		return p.tilde(), nil
	case "^":
		return p.caret(), nil
	default:
		return p.xrange(kind), nil
	}
}

// splitOperator splits the leading operator off f.
func splitOperator(f string) (kind, rest string) {
	for _, o := range []string{"~>", ">=", "<=", "~", "^", ">", "<", "="} {
		if strings.HasPrefix(f, o) {
			return o, f[len(o):]
		}
	}
	return "", f
}

// Match reports whether v satisfies the range: some comparator set has
// every comparator satisfied, and, when v is a prerelease, that set names a
// prerelease of v's major.minor.patch. Build metadata is ignored.
func (r Range) Match(v *semver.Version) bool {
	if v == nil {
		return false
	}
	for _, set := range r.sets {
		if matchSet(set, v) {
			return true
		}
	}
	return false
}

func matchSet(set []comparator, v *semver.Version) bool {
	for _, c := range set {
		if !c.test(v) {
			return false
		}
	}
	if v.Prerelease() == "" {
		return true
	}
	for _, c := range set {
		if c.op == opAny || c.v.Prerelease() == "" {
			continue
		}
		if c.v.Major() == v.Major() && c.v.Minor() == v.Minor() && c.v.Patch() == v.Patch() {
			return true
		}
	}
	return false
}

// String returns the range as written, with runs of white space collapsed
// to one space.
func (r Range) String() string { return r.raw }

// Canonical returns the desugared range in npm's format (node-semver's
// Range.range): comparator sets joined by "||", comparators by a space, and
// "" for a range that matches every release. ParseRange of the result is
// an equivalent range.
func (r Range) Canonical() string {
	var b strings.Builder
	for i, set := range r.sets {
		if i > 0 {
			b.WriteString("||")
		}
		for j, c := range set {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(c.String())
		}
	}
	return strings.TrimSpace(b.String())
}
