package semverx

import (
	"errors"
	"strings"
	"testing"
)

func asSyntaxError(err error, target **SyntaxError) bool { return errors.As(err, target) }

func TestParseVersionValid(t *testing.T) {
	for _, in := range []string{
		"0.0.0",
		"1.0.0",
		"10.20.30",
		"1.2.3-alpha.1",
		"1.2.3-0",
		"1.2.3-0.3.7",
		"1.2.3-x.7.z.92",
		"1.2.3-a-b",
		"1.2.3-0a",
		"1.2.3+build.5",
		"1.2.3+001",
		"1.2.3-rc.1+build.1-a",
		"9007199254740991.0.0",
	} {
		v, err := ParseVersion(in)
		if err != nil {
			t.Errorf("ParseVersion(%q): %v", in, err)
			continue
		}
		if v.Original() != in {
			t.Errorf("ParseVersion(%q).Original() = %q", in, v.Original())
		}
	}
}

func TestParseVersionInvalid(t *testing.T) {
	tests := []struct{ in, reason string }{
		{"", "required"},
		{"v1.0.0", "prefix"},
		{"V1.0.0", "prefix"},
		{"=1.0.0", "prefix"},
		{"1.0", "three parts"},
		{"1", "three parts"},
		{"1.", "three parts"},
		{"01.0.0", "leading zero"},
		{"1.00.0", "leading zero"},
		{"1.0.00", "leading zero"},
		{"1.0.0-01", "leading zero"},
		{"1.0.0-", "empty"},
		{"1.0.0+", "empty"},
		{"1.0.0-a..b", "empty identifier"},
		{"1.0.0-a_b", "letters, digits"},
		{"1.0.0+a+b", "letters, digits"},
		{"^1.0.0", "not a range"},
		{">=1.0.0", "not a range"},
		{"~1.0.0", "not a range"},
		{"*", "not a range"},
		{"1.0.0 || 2.0.0", "not a range"},
		{"1.x.0", "wildcard"},
		{"1.0.*", "wildcard"},
		{"1.0.0.0", "exactly three"},
		{" 1.0.0", "spaces"},
		{"1.0.0 ", "spaces"},
		{"9007199254740992.0.0", "larger than"},
		{"1.a.0", "minor must be a number"},
		{"1.0.0beta", "unexpected"},
		{"1.0.0-" + strings.Repeat("a", 300), "at most 256"},
	}
	for _, tc := range tests {
		_, err := ParseVersion(tc.in)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("ParseVersion(%q) error = %v, want *SyntaxError", tc.in, err)
			continue
		}
		if se.Input != tc.in || !strings.Contains(se.Reason, tc.reason) {
			t.Errorf("ParseVersion(%q) = %q, want a reason containing %q", tc.in, se.Error(), tc.reason)
		}
	}
}
