package agent

import (
	"errors"
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/osteele/liquid"
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

// strictEngine parses instructions for checkTemplate.
// TEMPORARY: until internal/tmpl.Check lands.
var strictEngine = func() *liquid.Engine {
	e := liquid.NewEngine()
	e.StrictVariables()
	return e
}()

// checkTemplate reports whether s parses as a Liquid template.
// TEMPORARY: until internal/tmpl.Check lands.
func checkTemplate(s string) error {
	if _, err := strictEngine.ParseString(s); err != nil {
		return err
	}
	if i := strings.LastIndex(s, "{{"); i >= 0 && !strings.Contains(s[i:], "}}") {
		return errors.New("output \"{{\" not closed")
	}
	if i := strings.LastIndex(s, "{%"); i >= 0 && !strings.Contains(s[i:], "%}") {
		return errors.New("tag \"{%\" not closed")
	}
	return nil
}
