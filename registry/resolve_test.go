package registry

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	agents "github.com/kindgi/agents"
)

func TestResolveVersion(t *testing.T) {
	avail := []string{"1.9.0", "1.10.0", "1.2.3", "2.0.0-rc.1", "2.0.0", "0.2.5", "0.2.3", "0.0.3", "0.0.4", "1.2.3-beta.4", "1.2.4-beta.1", "3.0.0-alpha.1"}
	tests := []struct {
		rng, want string
	}{
		{"1.2.3", "1.2.3"},
		{"^1.2.3", "1.10.0"},
		{"~1.2.3", "1.2.3"},
		{">=1.0.0 <2.0.0", "1.10.0"},
		{"^0.2.3", "0.2.5"},
		{"^0.0.3", "0.0.3"},
		{"1.x", "1.10.0"},
		{"1.9.x", "1.9.0"},
		{"*", "2.0.0"},
		{"", "2.0.0"},
		{"^0.2.3 || ^1.0.0", "1.10.0"},
		{"1.2.3 - 1.9.0", "1.9.0"},
		{"^1.2.3-beta.2", "1.10.0"},
		{"~1.2.3-beta.2 <1.2.3", "1.2.3-beta.4"},
		{"2.0.0-rc.1", "2.0.0-rc.1"},
		{">=2.0.0-rc.0 <2.0.0", "2.0.0-rc.1"},
		{"^3.0.0-alpha", "3.0.0-alpha.1"},
		{">=2.0.0", "2.0.0"},
	}
	for _, tc := range tests {
		got, err := ResolveVersion(avail, tc.rng)
		if err != nil {
			t.Errorf("ResolveVersion(%q): %v", tc.rng, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ResolveVersion(%q) = %q, want %q", tc.rng, got, tc.want)
		}
	}
}

func TestResolveVersionNoMatch(t *testing.T) {
	avail := []string{"1.9.0", "not-a-version", "1.10.0", "v2.0.0", "1.2.3-beta.1", "1.9.0"}
	_, err := ResolveVersion(avail, "^2.0.0")
	var e *agents.ToolVersionUnresolvableError
	if !errors.As(err, &e) {
		t.Fatalf("error = %v, want *ToolVersionUnresolvableError", err)
	}
	want := &agents.ToolVersionUnresolvableError{Range: "^2.0.0", Available: []string{"1.10.0", "1.9.0", "1.2.3-beta.1"}}
	if diff := cmp.Diff(want, e); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
	if agents.CodeOf(err) != agents.CodeToolVersionUnresolvable {
		t.Errorf("code = %q", agents.CodeOf(err))
	}
}

func TestResolveVersionNoneAvailable(t *testing.T) {
	_, err := ResolveVersion(nil, "^1.0.0")
	var e *agents.ToolVersionUnresolvableError
	if !errors.As(err, &e) || len(e.Available) != 0 || e.Reason != "" {
		t.Fatalf("error = %#v", err)
	}
}

func TestResolveVersionInvalidRange(t *testing.T) {
	for _, rng := range []string{">=1.0.0, <2.0.0", "01.2.3", "latest", "!=1.0.0"} {
		_, err := ResolveVersion([]string{"1.0.0", "1.5.0"}, rng)
		var e *agents.ToolVersionUnresolvableError
		if !errors.As(err, &e) {
			t.Errorf("%q: error = %v, want *ToolVersionUnresolvableError", rng, err)
			continue
		}
		if e.Reason == "" || e.Range != rng {
			t.Errorf("%q: error = %#v, want Range and a Reason", rng, e)
		}
		if diff := cmp.Diff([]string{"1.5.0", "1.0.0"}, e.Available); diff != "" {
			t.Errorf("%q: Available (-want +got):\n%s", rng, diff)
		}
	}
}

func TestResolveVersionPrereleaseOnlyForItsTuple(t *testing.T) {
	// 1.2.4-beta.1 is within ^1.2.3-beta.2's bounds but is a prerelease of
	// another major.minor.patch: npm does not admit it.
	got, err := ResolveVersion([]string{"1.2.3-beta.4", "1.2.4-beta.1"}, "^1.2.3-beta.2")
	if err != nil || got != "1.2.3-beta.4" {
		t.Fatalf("got %q, %v; want 1.2.3-beta.4", got, err)
	}
	if _, err := ResolveVersion([]string{"1.2.4-beta.1", "2.0.0-rc.1"}, "^1.0.0"); agents.CodeOf(err) != agents.CodeToolVersionUnresolvable {
		t.Fatalf("^1.0.0 over prereleases only: err = %v, want tool-version-unresolvable", err)
	}
}

func TestResolveVersionExactTextWins(t *testing.T) {
	// 1.0.0+a and 1.0.0+b have the same precedence; an exact reference
	// resolves to the entry spelled that way.
	for _, want := range []string{"1.0.0+a", "1.0.0+b"} {
		got, err := ResolveVersion([]string{"1.0.0+a", "1.0.0+b"}, want)
		if err != nil || got != want {
			t.Errorf("ResolveVersion(%q) = %q, %v", want, got, err)
		}
	}
	// Otherwise the tie is broken by the text, whatever the input order.
	for _, avail := range [][]string{{"1.0.0+a", "1.0.0+b"}, {"1.0.0+b", "1.0.0+a"}} {
		if got, _ := ResolveVersion(avail, "^1.0.0"); got != "1.0.0+b" {
			t.Errorf("ResolveVersion(%v, ^1.0.0) = %q, want 1.0.0+b", avail, got)
		}
	}
}

func TestResolveVersionIgnoresOrder(t *testing.T) {
	avail := make([]string, 0, 100)
	for i := range 100 {
		avail = append(avail, fmt.Sprintf("1.%d.0", i))
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		rnd.Shuffle(len(avail), func(i, j int) { avail[i], avail[j] = avail[j], avail[i] })
		if got, err := ResolveVersion(avail, "~1.42.0 || <1.10.0"); err != nil || got != "1.42.0" {
			t.Fatalf("got %q, %v", got, err)
		}
		if got, _ := ResolveVersion(avail, "^1.0.0"); got != "1.99.0" {
			t.Fatalf("^1.0.0 = %q, want 1.99.0 (semver order, not string order)", got)
		}
	}
}
