package agent_test

import (
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"

	"github.com/kindgi/agents/agent"
)

func defineVersion(t *testing.T, v string) error {
	t.Helper()
	s := minimalSpec()
	s.Version = v
	_, err := agent.Define(s)
	return err
}

func TestDefineExactVersion(t *testing.T) {
	valid := []string{
		"0.0.0",
		"1.0.0",
		"10.20.30",
		"1.2.3-alpha",
		"1.0.0-alpha.1",
		"1.0.0-0.3.7",
		"1.0.0-x.7.z.92",
		"1.0.0-x-y-z.--",
		"1.0.0-0a",  // alphanumeric: a leading zero is fine
		"1.0.0-00a", // still alphanumeric
		"1.0.0+20130313144700",
		"1.0.0-beta+exp.sha.5114f85",
		"1.0.0+21AF26D3----117B344092BD",
		"1.0.0-alpha+001", // build identifiers may have leading zeros
		"9007199254740991.0.0",
	}
	for _, v := range valid {
		if err := defineVersion(t, v); err != nil {
			t.Errorf("version %q: unexpected error %v", v, err)
		}
	}

	invalid := []string{
		"1",
		"1.2",
		"1.2.3.4",
		"v1.2.3",
		"V1.2.3",
		"=1.2.3",
		"01.2.3",
		"1.02.3",
		"1.2.03",
		"1.2.3-01",       // numeric prerelease identifier with a leading zero
		"1.2.3-alpha.01", // …in a later identifier
		"1.2.3-00",
		"1.2.3-",
		"1.2.3+",
		"1.2.3-+",
		"1.2.3-a..b",
		"1.2.3+a..b",
		"1.2.3-a.",
		"1.2.3-a_b",
		"1.2.3-é",
		"1.2.3+b+c",
		"^1.2.3",
		"~1.2.3",
		">=1.0.0",
		"1.2.x",
		"*",
		" 1.2.3",
		"1.2.3 ",
		"1.2.3 || 2.0.0",
		"-1.2.3",
		"1.2.3-a\x00",
		"9007199254740992.0.0", // above 2^53-1, npm's limit
		"99999999999999999999.0.0",
		"1.0.0-" + strings.Repeat("a", 260), // longer than 256 characters
	}
	for _, v := range invalid {
		err := defineVersion(t, v)
		if err == nil {
			t.Errorf("version %q: Define accepted it", v)
			continue
		}
		if !strings.HasPrefix(err.Error(), "invalid agent: 1 issue: version: ") {
			t.Errorf("version %q: error %q is not one version issue", v, err)
		}
	}
}

// TestDefineVersionStricterThanMasterminds pins versions Masterminds'
// StrictNewVersion accepts that Define must refuse. Masterminds v3.5.0
// already refuses the semver 2.0.0 violations of the table above (leading
// zeros in numeric prerelease identifiers, empty identifiers); what it still
// admits are numbers npm cannot represent, which the registry could not
// resolve or order the way npm does.
func TestDefineVersionStricterThanMasterminds(t *testing.T) {
	for _, v := range []string{"9007199254740992.0.0", "1.18446744073709551615.0", "0.0.18446744073709551615"} {
		if _, err := semver.StrictNewVersion(v); err != nil {
			t.Errorf("Masterminds now rejects %q (%v): move it to the main table", v, err)
		}
		if err := defineVersion(t, v); err == nil {
			t.Errorf("version %q: Define accepted it", v)
		}
	}
}

func TestDefineToolRanges(t *testing.T) {
	valid := []string{
		"1.2.3", "=1.2.3", "v1.2.3", "^1.2.3", "~1.2.3", "~>1.2.3", ">=1.0.0 <2.0.0", ">1.0.0 <=1.5.0",
		"^0.2.3", "1.x", "1.2.X", "1", "*", "x", "1.0.0 - 2.0.0", "^1.0.0 || ^2.0.0", "1.2.3-beta.1", ">=1.0.0-rc.1",
	}
	for _, r := range valid {
		s := minimalSpec()
		s.Tools = []agent.ToolRef{{ID: "acme.tool", Version: r}}
		if _, err := agent.Define(s); err != nil {
			t.Errorf("range %q: unexpected error %v", r, err)
		}
	}
	invalid := []string{"latest", "^^1.0.0", "1.2.3.4", ">=>1.0.0", "1.0.0-01", "1.2.3,2.0.0", "01.2.3", "~1.2.3 - 2"}
	for _, r := range invalid {
		s := minimalSpec()
		s.Tools = []agent.ToolRef{{ID: "acme.tool", Version: r}}
		_, err := agent.Define(s)
		if err == nil {
			t.Errorf("range %q: Define accepted it", r)
			continue
		}
		if !strings.HasPrefix(err.Error(), "invalid agent: 1 issue: tools[0].version: ") {
			t.Errorf("range %q: error %q is not one tools[0].version issue", r, err)
		}
	}
}
