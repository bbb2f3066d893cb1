// Package registry holds the in-memory registries: Agents, a catalog of
// agent definitions keyed by (id, version), and Tools, a per-tenant catalog
// of tool versions that implements bindings.ToolRegistry. ResolveVersion
// picks the highest version satisfying an npm-style range.
//
// # Version order
//
// Versions are exact semver 2.0.0 and are ordered by semver precedence, not
// as strings: 1.10.0 is above 1.9.0, and a prerelease is below its release
// (2.0.0-rc.1 < 2.0.0). Two versions that differ only in build metadata
// (1.0.0+a, 1.0.0+b) have the same precedence; they are ordered by their
// text so every listing is deterministic.
//
// # Ranges
//
// Ranges follow npm's node-semver exactly: 1.2.3, ^1.2.3, ~1.2.3,
// >=1.0.0 <2.0.0, 1.x, 1.2.*, *, the empty range, hyphen ranges
// (1.2.3 - 2.3.4) and unions with ||. A prerelease satisfies a range only
// when a comparator of the same || branch names a prerelease of the same
// major.minor.patch: ^1.2.3-beta.2 admits 1.2.3-beta.4 but not 1.2.4-beta.1,
// and ^1.0.0 admits no prerelease at all. The constraints of
// github.com/Masterminds/semver differ from npm's on several points
// (prereleases, commas, leading zeros, the empty range, ...), so ranges are
// parsed by this module (internal/semverx documents every difference and
// tests each); Masterminds provides the version type and its precedence.
package registry

import (
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/internal/semverx"
)

// version is a parsed exact version with the text it was given as.
type version struct {
	text string
	v    *semver.Version
}

// compareVersions orders by semver precedence, then by text.
func compareVersions(a, b version) int {
	if d := a.v.Compare(b.v); d != 0 {
		return d
	}
	return strings.Compare(a.text, b.text)
}

// ResolveVersion returns the highest of available that satisfies the
// npm-style range rng (see the package documentation for the rules). An
// entry of available that is exactly rng is returned as is, so an exact
// version always resolves to itself. Entries that are not exact semver
// versions are skipped; duplicates are harmless.
//
// When no entry satisfies rng, the error is an
// *agents.ToolVersionUnresolvableError (code tool-version-unresolvable)
// with Range and Available, the valid entries highest first. When rng is
// not a valid range the error is the same type, with Reason saying why the
// range does not parse.
func ResolveVersion(available []string, rng string) (string, error) {
	r, err := semverx.ParseRange(rng)
	if err != nil {
		return "", invalidRange("", rng, err, parseAll(available))
	}
	var best version
	found := false
	for _, s := range available {
		v, err := semverx.ParseVersion(s)
		if err != nil {
			continue
		}
		if s == rng {
			return s, nil
		}
		cand := version{text: s, v: v}
		if (!found || compareVersions(cand, best) > 0) && r.Match(v) {
			best, found = cand, true
		}
	}
	if !found {
		return "", &agents.ToolVersionUnresolvableError{Range: rng, Available: parseAll(available)}
	}
	return best.text, nil
}

// parseAll returns the valid, distinct versions of list, highest first.
func parseAll(list []string) []string {
	vs := make([]version, 0, len(list))
	seen := make(map[string]bool, len(list))
	for _, s := range list {
		if seen[s] {
			continue
		}
		seen[s] = true
		if v, err := semverx.ParseVersion(s); err == nil {
			vs = append(vs, version{text: s, v: v})
		}
	}
	sort.Slice(vs, func(i, j int) bool { return compareVersions(vs[i], vs[j]) > 0 })
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.text
	}
	return out
}

// invalidRange is the error for a range that does not parse.
func invalidRange(toolID, rng string, err error, available []string) error {
	return &agents.ToolVersionUnresolvableError{ToolID: toolID, Range: rng, Available: available, Reason: syntaxReason(err)}
}
