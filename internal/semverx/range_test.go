package semverx

import (
	"strings"
	"testing"
)

// rangeCases is the npm range table: each row is what node-semver's
// satisfies(version, range) returns (loose and includePrerelease false).
var rangeCases = []struct {
	rng, version string
	want         bool
}{
	// exact
	{"1.2.3", "1.2.3", true},
	{"1.2.3", "1.2.4", false},
	{"1.2.3", "1.2.3+build.7", true},
	{"1.2.3+build", "1.2.3", true},
	{"=1.2.3", "1.2.3", true},
	{"v1.2.3", "1.2.3", true},
	{"=v1.2.3", "1.2.3", true},
	{"1.2.3", "1.2.3-beta", false},
	{"1.2.3-beta.1", "1.2.3-beta.1", true},
	{"1.2.3-beta.1", "1.2.3-beta.2", false},

	// caret
	{"^1.2.3", "1.2.3", true},
	{"^1.2.3", "1.9.9", true},
	{"^1.2.3", "2.0.0", false},
	{"^1.2.3", "1.2.2", false},
	{"^1.2.3", "1.3.0-beta", false},
	{"^1.2.3", "2.0.0-0", false},
	{"^ 1.2.3", "1.4.0", true},
	{"^0.2.3", "0.2.3", true},
	{"^0.2.3", "0.2.9", true},
	{"^0.2.3", "0.3.0", false},
	{"^0.2.3", "0.2.2", false},
	{"^0.0.3", "0.0.3", true},
	{"^0.0.3", "0.0.4", false},
	{"^0.0.3", "0.0.2", false},
	{"^1.2.x", "1.2.0", true},
	{"^1.2.x", "1.9.0", true},
	{"^1.2.x", "2.0.0", false},
	{"^1.2.x", "1.1.9", false},
	{"^1.2", "1.2.0", true},
	{"^0.0.x", "0.0.5", true},
	{"^0.0.x", "0.1.0", false},
	{"^0.0", "0.0.9", true},
	{"^0.x", "0.9.9", true},
	{"^0.x", "1.0.0", false},
	{"^0.1", "0.1.5", true},
	{"^0.1", "0.2.0", false},
	{"^1", "1.0.0", true},
	{"^1", "2.0.0", false},
	{"^0", "0.0.1", true},
	{"^0", "1.0.0", false},
	{"^*", "3.0.0", true},
	{"^1.2.3-beta.2", "1.2.3-beta.4", true},
	{"^1.2.3-beta.2", "1.2.4-beta.1", false},
	{"^1.2.3-beta.2", "1.2.3-beta.1", false},
	{"^1.2.3-beta.2", "1.2.3", true},
	{"^1.2.3-beta.2", "1.5.0", true},
	{"^1.2.3-beta.2", "2.0.0-alpha", false},
	{"^0.0.3-beta", "0.0.3-pr.2", true},
	{"^0.0.3-beta", "0.0.3", true},
	{"^0.0.3-beta", "0.0.4", false},
	{"^0.1.2-rc.1", "0.1.9", true},
	{"^0.1.2-rc.1", "0.2.0", false},

	// tilde
	{"~1.2.3", "1.2.3", true},
	{"~1.2.3", "1.2.9", true},
	{"~1.2.3", "1.3.0", false},
	{"~1.2.3", "1.2.2", false},
	{"~1.2", "1.2.0", true},
	{"~1.2", "1.3.0", false},
	{"~1", "1.9.9", true},
	{"~1", "2.0.0", false},
	{"~>1.2.3", "1.2.5", true},
	{"~>1.2.3", "1.3.0", false},
	{"~ 1.2.3", "1.2.4", true},
	{"~> 1", "1.5.0", true},
	{"~1.2.3-beta.2", "1.2.3-beta.4", true},
	{"~1.2.3-beta.2", "1.2.3-beta.1", false},
	{"~1.2.3-beta.2", "1.2.4-beta.2", false},
	{"~1.2.3-beta.2", "1.2.3", true},
	{"~1.2.3-beta.2", "1.2.9", true},
	{"~1.2.3-beta.2", "1.3.0", false},
	{"~0.0.0", "0.0.5", true},
	{"~0.0.0", "0.1.0", false},
	{"~0.0.0", "1.0.0", false},
	{"~0.2.3", "0.2.9", true},
	{"~0.2.3", "0.3.0", false},
	{"~*", "5.0.0", true},

	// primitives and intersections
	{">=1.0.0 <2.0.0", "1.0.0", true},
	{">=1.0.0 <2.0.0", "1.5.0", true},
	{">=1.0.0 <2.0.0", "2.0.0", false},
	{">=1.0.0 <2.0.0", "0.9.9", false},
	{">=1.0.0 <2.0.0", "2.0.0-alpha", false},
	{">=1.0.0 <2.0.0", "1.5.0-beta", false},
	{">= 1.0.0   < 2.0.0", "1.5.0", true},
	{"  >=1.0.0\t<2.0.0 ", "1.5.0", true},
	{">1.2.3", "1.2.4", true},
	{">1.2.3", "1.2.3", false},
	{">1.2.3-alpha.3", "1.2.3-alpha.7", true},
	{">1.2.3-alpha.3", "3.4.5-alpha.9", false},
	{">1.2.3-alpha.3", "3.4.5", true},
	{">1.2.3-alpha.3", "1.2.3-alpha.3", false},
	{">1.2.3-alpha.3", "1.2.3", true},
	{"<1.2.3", "1.2.2", true},
	{"<1.2.3", "1.2.3-beta", false},
	{"<1.2.3", "1.2.3", false},
	{"<=1.2.3", "1.2.3", true},
	{"<=1.2.3", "1.2.4", false},
	{"<1.2.3-beta.5", "1.2.3-beta.2", true},
	{"<1.2.3-beta.5", "1.2.2", true},
	{"<1.2.3-beta.5", "1.0.0-rc.1", false},
	{">=1.2.3-beta <1.2.4", "1.2.3-rc.1", true},
	{">=1.2.3-beta <1.2.4", "1.2.4-rc.1", false},
	{"^1.2.3 <1.5.0", "1.4.9", true},
	{"^1.2.3 <1.5.0", "1.5.0", false},
	{">=0.0.0-0", "0.0.0-alpha", true},
	{">=0.0.0-0", "1.0.0-alpha", false},
	{">=0.0.0 <0.0.0-1", "0.0.0-0", true}, // >=0.0.0 is "*" in npm

	// x-ranges
	{"1.x", "1.0.0", true},
	{"1.x", "1.9.9", true},
	{"1.x", "2.0.0", false},
	{"1.x", "0.9.9", false},
	{"1.x", "1.5.0-beta", false},
	{"1.X", "1.2.3", true},
	{"1.*", "1.2.3", true},
	{"1.x.x", "1.2.3", true},
	{"1.x.3", "1.2.0", true},
	{"1.2.x", "1.2.0", true},
	{"1.2.x", "1.2.9", true},
	{"1.2.x", "1.3.0", false},
	{"1.2.*", "1.2.5", true},
	{"1.2.x-beta", "1.2.3", true},
	{"1", "1.5.0", true},
	{"1", "2.0.0", false},
	{"1.2", "1.2.9", true},
	{"1.2", "1.3.0", false},
	{"=1.x", "1.3.0", true},
	{"*", "1.2.3", true},
	{"*", "0.0.0", true},
	{"*", "1.2.3-beta", false},
	{"x", "9.9.9", true},
	{"X", "0.1.0", true},
	{"", "1.2.3", true},
	{"", "1.2.3-beta", false},
	{"   ", "1.0.0", true},
	{">1.x", "2.0.0", true},
	{">1.x", "1.9.9", false},
	{">1.2", "1.3.0", true},
	{">1.2", "1.2.9", false},
	{">=1.2", "1.2.0", true},
	{">=1.2", "1.1.9", false},
	{"<=1.2", "1.2.9", true},
	{"<=1.2", "1.3.0", false},
	{"<=1.x", "1.9.0", true},
	{"<=1.x", "2.0.0", false},
	{"<1.x", "0.9.9", true},
	{"<1.x", "1.0.0", false},
	{"<1.2.x", "1.1.9", true},
	{"<1.2.x", "1.2.0", false},
	{">*", "1.0.0", false},
	{"<*", "0.0.0", false},
	{">=*", "1.0.0", true},
	{"<=*", "1.0.0", true},

	// unions
	{"1.2.3 || 2.x", "1.2.3", true},
	{"1.2.3 || 2.x", "2.5.0", true},
	{"1.2.3 || 2.x", "1.2.4", false},
	{"1.2.3 || 2.x", "3.0.0", false},
	{"1.2.3||1.2.4", "1.2.4", true},
	{"^1.0.0 || ^2.0.0 || ^3.0.0", "3.1.0", true},
	{"^1.0.0 || ^2.0.0 || ^3.0.0", "4.0.0", false},
	{"<1.0.0 || >=2.0.0", "1.5.0", false},
	{"<1.0.0 || >=2.0.0", "0.5.0", true},
	{"1.2.3 ||", "9.0.0", true},
	{"|| 1.2.3", "9.0.0", true},
	{"1.2.3-beta || 2.x", "1.2.3-beta", true},
	{"1.2.3-beta || *", "1.2.3-beta", false},
	{"<x || 1.2.3", "1.2.3", true},

	// hyphen ranges
	{"1.2.3 - 2.3.4", "1.2.3", true},
	{"1.2.3 - 2.3.4", "2.3.4", true},
	{"1.2.3 - 2.3.4", "2.3.5", false},
	{"1.2.3 - 2.3.4", "1.2.2", false},
	{"1.2.3 - 2.3.4", "2.3.4-beta", false},
	{"1.2 - 2.3.4", "1.2.0", true},
	{"1.2 - 2.3.4", "1.1.9", false},
	{"1.2.3 - 2.3", "2.3.9", true},
	{"1.2.3 - 2.3", "2.4.0", false},
	{"1.2.3 - 2", "2.9.9", true},
	{"1.2.3 - 2", "3.0.0", false},
	{"* - 2", "0.0.1", true},
	{"* - 2", "3.0.0", false},
	{"1.2.3 - *", "9.9.9", true},
	{"1.2.3 - *", "1.2.2", false},
	{"1.2.3-beta.1 - 1.2.3", "1.2.3-beta.3", true},
	{"1.2.3-beta.1 - 1.2.3", "1.2.3", true},
	{"1.2.3-beta.1 - 1.2.3", "1.2.4-beta", false},
	{"v1.2.3 - v2.0.0", "1.5.0", true},
	{"1.0.0 - 1.2.0 || 2.x", "2.1.0", true},
}

func TestRangeMatch(t *testing.T) {
	for _, tc := range rangeCases {
		r, err := ParseRange(tc.rng)
		if err != nil {
			t.Errorf("ParseRange(%q): %v", tc.rng, err)
			continue
		}
		v, err := ParseVersion(tc.version)
		if err != nil {
			t.Fatalf("ParseVersion(%q): %v", tc.version, err)
		}
		if got := r.Match(v); got != tc.want {
			t.Errorf("%q matches %q = %v, want %v (canonical %q)", tc.rng, tc.version, got, tc.want, r.Canonical())
		}
	}
}

// TestRangeCanonical checks the desugaring against node-semver's
// Range.range for the same input.
func TestRangeCanonical(t *testing.T) {
	tests := []struct{ in, want string }{
		{"1.0.0 - 2.0.0", ">=1.0.0 <=2.0.0"},
		{"1.0.0", "1.0.0"},
		{">=*", ""},
		{"", ""},
		{"*", ""},
		{">=1.0.0", ">=1.0.0"},
		{">1.0.0", ">1.0.0"},
		{"<=2.0.0", "<=2.0.0"},
		{"<2.0.0", "<2.0.0"},
		{">= 1.0.0", ">=1.0.0"},
		{"0.1.20 || 1.2.4", "0.1.20||1.2.4"},
		{">=0.2.3 || <0.0.1", ">=0.2.3||<0.0.1"},
		{"2.x.x", ">=2.0.0 <3.0.0-0"},
		{"1.2.x", ">=1.2.0 <1.3.0-0"},
		{"1.2.x || 2.x", ">=1.2.0 <1.3.0-0||>=2.0.0 <3.0.0-0"},
		{"x", ""},
		{"2.*.*", ">=2.0.0 <3.0.0-0"},
		{"2", ">=2.0.0 <3.0.0-0"},
		{"2.3", ">=2.3.0 <2.4.0-0"},
		{"~2.4", ">=2.4.0 <2.5.0-0"},
		{"~>3.2.1", ">=3.2.1 <3.3.0-0"},
		{"~1", ">=1.0.0 <2.0.0-0"},
		{"~>1", ">=1.0.0 <2.0.0-0"},
		{"~> 1", ">=1.0.0 <2.0.0-0"},
		{"~1.0", ">=1.0.0 <1.1.0-0"},
		{"~ 1.0", ">=1.0.0 <1.1.0-0"},
		{"~1.2.3-beta.2", ">=1.2.3-beta.2 <1.3.0-0"},
		{"~0.0.0", "<0.1.0-0"},
		{"^0", "<1.0.0-0"},
		{"^ 1", ">=1.0.0 <2.0.0-0"},
		{"^0.1", ">=0.1.0 <0.2.0-0"},
		{"^1.0", ">=1.0.0 <2.0.0-0"},
		{"^1.2", ">=1.2.0 <2.0.0-0"},
		{"^0.0.1", ">=0.0.1 <0.0.2-0"},
		{"^0.0.1-beta", ">=0.0.1-beta <0.0.2-0"},
		{"^0.1.2", ">=0.1.2 <0.2.0-0"},
		{"^1.2.3", ">=1.2.3 <2.0.0-0"},
		{"^1.2.3-beta.4", ">=1.2.3-beta.4 <2.0.0-0"},
		{"^1.2.x", ">=1.2.0 <2.0.0-0"},
		{"^0.0.x", "<0.1.0-0"},
		{"<1", "<1.0.0-0"},
		{"< 1", "<1.0.0-0"},
		{">=1", ">=1.0.0"},
		{">= 1", ">=1.0.0"},
		{"<1.2", "<1.2.0-0"},
		{"< 1.2", "<1.2.0-0"},
		{">1", ">=2.0.0"},
		{">1.2", ">=1.3.0"},
		{"<=1.2.x", "<1.3.0-0"},
		{">X", "<0.0.0-0"},
		{"<X", "<0.0.0-0"},
		{"<x <* || >* 2.x", "<0.0.0-0"},
		{">x 2.x || * || <x", ""},
		{"1.2.3 - 2.3", ">=1.2.3 <2.4.0-0"},
		{"1.2 - 2.3.4", ">=1.2.0 <=2.3.4"},
		{"1.x - 2", ">=1.0.0 <3.0.0-0"},
		{"* - *", ""},
		{"^1.2.3 <1.5.0", ">=1.2.3 <2.0.0-0 <1.5.0"},
		{"1.2.3 1.2.3", "1.2.3"},
		{"* 1.2.3", "1.2.3"},
		{"1.2.3+build", "1.2.3"},
		{"1.2.3 ||", ""},
		{"1.2.3-beta || *", ""},
	}
	for _, tc := range tests {
		r, err := ParseRange(tc.in)
		if err != nil {
			t.Errorf("ParseRange(%q): %v", tc.in, err)
			continue
		}
		if got := r.Canonical(); got != tc.want {
			t.Errorf("ParseRange(%q).Canonical() = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseRangeInvalid(t *testing.T) {
	for _, in := range []string{
		">=1.0.0, <2.0.0",
		"01.2.3",
		"1.02",
		"^1.2.03",
		"!=1.2.3",
		"=>1.0.0",
		"=<1.0.0",
		"1.2.3.4",
		"a.b.c",
		">",
		"^",
		"~",
		">1.2.3 <",
		"1.2.3 -",
		"- 1.2.3",
		"1.2.3 -2.0.0",
		">=1.0.0 1.2.3 - 2.0.0",
		"1.2.3 - 2.3.4 - 5",
		">1 - 2",
		"9007199254740992",
		"1.2.3-01",
		"1.2.3-",
		"1.2.3+",
		"1.2.3-beta..1",
		"1.2.3-be_ta",
		"1 | 2",
		"1.2.3 |||",
		">= ~1.2",
		">~1.2.3",
		"==1.2.3",
		"^=1.2.3",
		"1.x-beta",
		"V1.2.3",
		"1.2.3beta",
		"latest",
		"1.2.3 || 2.0.0.0",
	} {
		r, err := ParseRange(in)
		if err == nil {
			t.Errorf("ParseRange(%q) = %q, want an error", in, r.Canonical())
			continue
		}
		var se *SyntaxError
		if !asSyntaxError(err, &se) || se.Input != in || se.Reason == "" {
			t.Errorf("ParseRange(%q) error = %#v, want a *SyntaxError naming the input", in, err)
		}
	}
}

func TestRangeString(t *testing.T) {
	r, err := ParseRange("  ^1.2.3\t||  >= 2.0.0 ")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.String(), "^1.2.3 || >= 2.0.0"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestZeroRangeMatchesNothing(t *testing.T) {
	v, _ := ParseVersion("1.0.0")
	if (Range{}).Match(v) {
		t.Error("zero Range matched 1.0.0")
	}
	r, _ := ParseRange("*")
	if r.Match(nil) {
		t.Error("Match(nil) = true")
	}
}

func TestCanonicalReparses(t *testing.T) {
	for _, tc := range rangeCases {
		r, err := ParseRange(tc.rng)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := ParseRange(r.Canonical())
		if err != nil {
			t.Fatalf("canonical %q of %q does not parse: %v", r.Canonical(), tc.rng, err)
		}
		v, _ := ParseVersion(tc.version)
		if r2.Match(v) != tc.want {
			t.Errorf("canonical %q of %q: match %q = %v, want %v", r.Canonical(), tc.rng, tc.version, !tc.want, tc.want)
		}
	}
}

func TestLongRangeParses(t *testing.T) {
	sets := make([]string, 200)
	for i := range sets {
		sets[i] = "^1.0.0"
	}
	if _, err := ParseRange(strings.Join(sets, " || ")); err != nil {
		t.Fatal(err)
	}
}
