package semverx

import "testing"

// FuzzParseRange checks that ParseRange never panics, that the canonical
// form of a parsed range parses again to the same canonical form and
// matches the same versions.
func FuzzParseRange(f *testing.F) {
	for _, tc := range rangeCases {
		f.Add(tc.rng, tc.version)
	}
	f.Add(">=1.0.0, <2.0.0", "1.0.0")
	f.Add("1.2.3 - 2.3.4 || ~0.0.0", "0.0.1-rc.1")
	f.Fuzz(func(t *testing.T, rng, version string) {
		r, err := ParseRange(rng)
		if err != nil {
			return
		}
		canon := r.Canonical()
		r2, err := ParseRange(canon)
		if err != nil {
			t.Fatalf("canonical %q of %q does not parse: %v", canon, rng, err)
		}
		if got := r2.Canonical(); got != canon {
			t.Fatalf("canonical of %q is %q, re-parsed %q", rng, canon, got)
		}
		v, err := ParseVersion(version)
		if err != nil {
			return
		}
		if r.Match(v) != r2.Match(v) {
			t.Fatalf("%q and its canonical %q disagree on %q", rng, canon, version)
		}
	})
}

// FuzzParseVersion checks that ParseVersion never panics and that an exact
// version, read as a range, matches itself.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"1.2.3", "0.0.0-0", "1.2.3-rc.1+b.2", "v1.0.0", "01.0.0", "1.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			return
		}
		r, err := ParseRange(s)
		if err != nil {
			t.Fatalf("version %q does not parse as a range: %v", s, err)
		}
		if !r.Match(v) {
			t.Fatalf("range %q does not match version %q", s, s)
		}
	})
}
