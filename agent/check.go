package agent

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/kindgi/agents/internal/tmpl"
)

// checkExactVersion reports whether s is an exact Semantic Versioning 2.0.0
// version. semver.StrictNewVersion does most of the work; the identifiers
// after the patch number are then checked again against the grammar of
// semver.org, so that anything Masterminds admits beyond SemVer 2.0.0 (now
// or in a later release) is still refused: an empty identifier ("1.0.0-a..b",
// "1.0.0+"), a numeric prerelease identifier with a leading zero
// ("1.0.0-01"), or a character outside [0-9A-Za-z-].
func checkExactVersion(s string) error {
	if _, err := semver.StrictNewVersion(s); err != nil {
		return err
	}
	core, build, hasBuild := strings.Cut(s, "+")
	_, pre, hasPre := strings.Cut(core, "-")
	if hasPre {
		for _, id := range strings.Split(pre, ".") {
			if err := checkIdentifier(id, "prerelease"); err != nil {
				return err
			}
			if isNumeric(id) && len(id) > 1 && id[0] == '0' {
				return fmt.Errorf("numeric prerelease identifier %q has a leading zero", id)
			}
		}
	}
	if hasBuild {
		for _, id := range strings.Split(build, ".") {
			if err := checkIdentifier(id, "build metadata"); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkIdentifier checks one dot-separated prerelease or build identifier:
// non-empty, of ASCII letters, digits and '-'.
func checkIdentifier(id, what string) error {
	if id == "" {
		return fmt.Errorf("empty %s identifier", what)
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		if !(b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b == '-') {
			return fmt.Errorf("%s identifier %q has a character other than [0-9A-Za-z-]", what, id)
		}
	}
	return nil
}

func isNumeric(id string) bool {
	for i := 0; i < len(id); i++ {
		if id[i] < '0' || id[i] > '9' {
			return false
		}
	}
	return id != ""
}

// checkRange reports whether s is a valid npm-style version range.
// TEMPORARY: Masterminds constraints until internal/semverx.ParseRange lands.
func checkRange(s string) error {
	_, err := semver.NewConstraint(s)
	return err
}

// checkTemplate reports whether s parses as a Liquid template, with the
// engine configuration prompt.Render uses: what Define accepts, Render can
// parse.
func checkTemplate(s string) error { return tmpl.Check(s) }
