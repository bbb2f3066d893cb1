package agent

import (
	"errors"

	"github.com/kindgi/agents/internal/semverx"
	"github.com/kindgi/agents/internal/tmpl"
)

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
