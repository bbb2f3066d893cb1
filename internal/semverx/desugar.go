package semverx

import (
	"fmt"

	"github.com/Masterminds/semver/v3"
)

// This file desugars partials, tildes, carets, x-ranges and hyphen ranges
// into primitive comparators, as node-semver does.

// partial is a parsed partial version. n counts the leading parts given as
// numbers: 0 when the major is a wildcard or missing, 3 for a full version.
type partial struct {
	major, minor, patch uint64
	n                   int
	pre                 string
}

// parsePartial parses 'v'? xr ( '.' xr ( '.' xr qualifier? )? )?.
func parsePartial(s string) (partial, error) {
	p := parser{s: s}
	p.eat('v')
	var out partial
	nums := [3]*uint64{&out.major, &out.minor, &out.patch}
	wild := false
	parts := 0
	for i := range nums {
		if i > 0 && !p.eat('.') {
			break
		}
		if p.peekX() {
			p.i++
			wild = true
		} else {
			tok := p.digits()
			if tok == "" {
				return partial{}, fmt.Errorf("%q: %s must be a number, x or *", s, partNames[i])
			}
			if reason := checkNumber(tok, partNames[i]); reason != "" {
				return partial{}, fmt.Errorf("%q: %s", s, reason)
			}
			if !wild {
				*nums[i] = parseNumber(tok)
				out.n++
			}
		}
		parts++
	}
	if parts == 3 {
		if p.eat('-') {
			pre := p.until('+')
			if reason := checkIdentifiers(pre, "prerelease"); reason != "" {
				return partial{}, fmt.Errorf("%q: %s", s, reason)
			}
			if !wild {
				out.pre = pre
			}
		}
		if p.eat('+') {
			if reason := checkIdentifiers(p.rest(), "build"); reason != "" {
				return partial{}, fmt.Errorf("%q: %s", s, reason)
			}
			p.i = len(p.s)
		}
	}
	if !p.done() {
		return partial{}, fmt.Errorf("%q: unexpected %q", s, p.rest())
	}
	return out, nil
}

// ver builds a version; pre "" means a release.
func ver(major, minor, patch uint64, pre string) *semver.Version {
	return semver.New(major, minor, patch, pre, "")
}

func (p partial) full() *semver.Version { return ver(p.major, p.minor, p.patch, p.pre) }

var anyComparator = comparator{op: opAny}

// tilde: ~1 is >=1.0.0 <2.0.0-0, ~1.2 and ~1.2.3 stay below 1.3.0-0.
func (p partial) tilde() []comparator {
	switch p.n {
	case 0:
		return []comparator{anyComparator}
	case 1:
		return between(ver(p.major, 0, 0, ""), ver(p.major+1, 0, 0, "0"))
	case 2:
		return between(ver(p.major, p.minor, 0, ""), ver(p.major, p.minor+1, 0, "0"))
	default:
		return between(p.full(), ver(p.major, p.minor+1, 0, "0"))
	}
}

// caret: allows changes that do not modify the left-most non-zero part.
func (p partial) caret() []comparator {
	switch {
	case p.n == 0:
		return []comparator{anyComparator}
	case p.n == 1:
		return between(ver(p.major, 0, 0, ""), ver(p.major+1, 0, 0, "0"))
	case p.n == 2 && p.major == 0:
		return between(ver(0, p.minor, 0, ""), ver(0, p.minor+1, 0, "0"))
	case p.n == 2:
		return between(ver(p.major, p.minor, 0, ""), ver(p.major+1, 0, 0, "0"))
	case p.major == 0 && p.minor == 0:
		return between(p.full(), ver(0, 0, p.patch+1, "0"))
	case p.major == 0:
		return between(p.full(), ver(0, p.minor+1, 0, "0"))
	default:
		return between(p.full(), ver(p.major+1, 0, 0, "0"))
	}
}

// xrange handles a bare or primitive partial; kind is "", "=", "<", ">",
// "<=" or ">=".
func (p partial) xrange(kind string) []comparator {
	if p.n == 3 {
		switch kind {
		case "", "=":
			return []comparator{{op: opEQ, v: p.full()}}
		case "<":
			return []comparator{{op: opLT, v: p.full()}}
		case "<=":
			return []comparator{{op: opLE, v: p.full()}}
		case ">":
			return []comparator{{op: opGT, v: p.full()}}
		default:
			return []comparator{{op: opGE, v: p.full()}}
		}
	}
	if p.n == 0 {
		if kind == "<" || kind == ">" {
			return []comparator{{op: opLT, v: ver(0, 0, 0, "0")}}
		}
		return []comparator{anyComparator}
	}
	major, minor := p.major, p.minor
	if p.n == 1 {
		minor = 0
	}
	switch kind {
	case "", "=":
		if p.n == 1 {
			return between(ver(major, 0, 0, ""), ver(major+1, 0, 0, "0"))
		}
		return between(ver(major, minor, 0, ""), ver(major, minor+1, 0, "0"))
	case ">":
		if p.n == 1 {
			return []comparator{{op: opGE, v: ver(major+1, 0, 0, "")}}
		}
		return []comparator{{op: opGE, v: ver(major, minor+1, 0, "")}}
	case "<=":
		if p.n == 1 {
			return []comparator{{op: opLT, v: ver(major+1, 0, 0, "0")}}
		}
		return []comparator{{op: opLT, v: ver(major, minor+1, 0, "0")}}
	case "<":
		return []comparator{{op: opLT, v: ver(major, minor, 0, "0")}}
	default: // ">="
		return []comparator{{op: opGE, v: ver(major, minor, 0, "")}}
	}
}

// hyphen desugars "from - to".
func hyphen(fromText, toText string) ([]comparator, error) {
	from, err := parsePartial(fromText)
	if err != nil {
		return nil, err
	}
	to, err := parsePartial(toText)
	if err != nil {
		return nil, err
	}
	var out []comparator
	switch from.n {
	case 0:
	case 1:
		out = append(out, comparator{op: opGE, v: ver(from.major, 0, 0, "")})
	case 2:
		out = append(out, comparator{op: opGE, v: ver(from.major, from.minor, 0, "")})
	default:
		out = append(out, comparator{op: opGE, v: from.full()})
	}
	switch to.n {
	case 0:
	case 1:
		out = append(out, comparator{op: opLT, v: ver(to.major+1, 0, 0, "0")})
	case 2:
		out = append(out, comparator{op: opLT, v: ver(to.major, to.minor+1, 0, "0")})
	default:
		out = append(out, comparator{op: opLE, v: to.full()})
	}
	return out, nil
}

func between(lo, hi *semver.Version) []comparator {
	return []comparator{{op: opGE, v: lo}, {op: opLT, v: hi}}
}
