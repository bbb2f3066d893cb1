package semverx

import (
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
)

// TestMastermindsDifferences pins every difference listed in ParseRange's
// documentation: Masterminds' Constraints still behave the listed way (if a
// new Masterminds release changes that, the list is stale and this test
// says so), and this package behaves like npm.
func TestMastermindsDifferences(t *testing.T) {
	const parseOnly = ""
	tests := []struct {
		name    string
		rng     string
		version string // parseOnly: compare whether the range parses
		// masterminds is what Masterminds does: for a version, whether
		// Check admits it; for parseOnly, whether NewConstraint accepts.
		masterminds bool
		npm         bool
	}{
		{"1. prerelease of another version, >", ">1.2.3-alpha.3", "3.4.5-alpha.9", true, false},
		{"1. prerelease of another version, ^", "^1.2.3-beta.2", "1.2.4-beta.1", true, false},
		{"1. prerelease of another version, ~", "~1.2.3-beta.2", "1.2.4-rc.1", true, false},
		{"1. prerelease of another version, <", "<1.2.3-beta.5", "1.0.0-rc.1", true, false},
		{"2. commas", ">=1.0.0, <2.0.0", parseOnly, true, false},
		{"3. leading zero in major", "01.2.3", parseOnly, true, false},
		{"3. leading zero in minor", "^1.02", parseOnly, true, false},
		{"4. empty range", "", parseOnly, false, true},
		{"5. empty side of ||", "1.2.3 ||", parseOnly, false, true},
		{"6. operator !=", "!=1.2.3", parseOnly, true, false},
		{"6. operator =>", "=>1.2.3", parseOnly, true, false},
		{"6. operator =<", "=<1.2.3", parseOnly, true, false},
		{"7. ~0.0.0", "~0.0.0", "1.0.0", true, false},
		{"8. prerelease on a wildcard partial", "1.2.x-beta", "1.2.5-alpha", true, false},
		{"9. a * set collapses the range", "1.2.3-beta || *", "1.2.3-beta", true, false},
		{"10. numbers above 2^53-1", "9007199254740992.0.0", parseOnly, true, false},
		{"11. more than 32 || groups", strings.Repeat("1.0.0 || ", 40) + "2.0.0", parseOnly, false, true},
		{"11. longer than 512 bytes", strings.Repeat(">=1.0.0 ", 70), parseOnly, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, mmErr := semver.NewConstraint(tc.rng)
			r, err := ParseRange(tc.rng)
			if tc.version == parseOnly {
				if got := mmErr == nil; got != tc.masterminds {
					t.Errorf("Masterminds NewConstraint(%q) accepted = %v, want %v (err %v): the difference list is stale", tc.rng, got, tc.masterminds, mmErr)
				}
				if got := err == nil; got != tc.npm {
					t.Errorf("ParseRange(%q) accepted = %v, want %v as npm (err %v)", tc.rng, got, tc.npm, err)
				}
				return
			}
			if mmErr != nil || err != nil {
				t.Fatalf("parse %q: masterminds %v, ours %v", tc.rng, mmErr, err)
			}
			v := semver.MustParse(tc.version)
			if got := c.Check(v); got != tc.masterminds {
				t.Errorf("Masterminds %q.Check(%s) = %v, want %v: the difference list is stale", tc.rng, tc.version, got, tc.masterminds)
			}
			if got := r.Match(v); got != tc.npm {
				t.Errorf("%q.Match(%s) = %v, want %v as npm", tc.rng, tc.version, got, tc.npm)
			}
		})
	}
}
