package registry

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
)

func ag(id, version string) agent.Agent {
	return agent.Agent{ID: id, Version: version, Name: id + " " + version}
}

func refs(list []agent.Agent) []string {
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = a.Ref()
	}
	return out
}

func TestAgentsSemverOrder(t *testing.T) {
	r, err := NewAgents(
		ag("acme.b", "1.9.0"),
		ag("acme.b", "1.10.0"),
		ag("acme.b", "2.0.0-rc.1"),
		ag("acme.b", "1.10.0-beta.2"),
		ag("acme.b", "1.10.0-beta.10"),
		ag("acme.a", "0.1.0"),
		ag("acme.b", "1.2.0"),
	)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1.2.0", "1.9.0", "1.10.0-beta.2", "1.10.0-beta.10", "1.10.0", "2.0.0-rc.1"}
	if diff := cmp.Diff(want, r.ListVersions("acme.b")); diff != "" {
		t.Errorf("ListVersions (-want +got):\n%s", diff)
	}
	latest, err := r.GetLatest("acme.b")
	if err != nil || latest.Version != "2.0.0-rc.1" {
		t.Errorf("GetLatest = %v, %v; want 2.0.0-rc.1", latest.Ref(), err)
	}
	if got, _ := r.Get("acme.b", ""); got.Version != "2.0.0-rc.1" {
		t.Errorf(`Get(id, "") = %s, want the latest`, got.Ref())
	}
	wantList := []string{"acme.a@0.1.0", "acme.b@1.2.0", "acme.b@1.9.0", "acme.b@1.10.0-beta.2", "acme.b@1.10.0-beta.10", "acme.b@1.10.0", "acme.b@2.0.0-rc.1"}
	if diff := cmp.Diff(wantList, refs(r.List())); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
}

func TestAgentsGet(t *testing.T) {
	r, err := NewAgents(ag("acme.x", "1.0.0"), ag("acme.x", "1.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Get("acme.x", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ag("acme.x", "1.0.0"), got); diff != "" {
		t.Errorf("Get (-want +got):\n%s", diff)
	}
	tests := []struct {
		id, version string
		want        *agents.AgentNotFoundError
	}{
		{"acme.x", "2.0.0", &agents.AgentNotFoundError{ID: "acme.x", Version: "2.0.0"}},
		{"acme.x", "^1.0.0", &agents.AgentNotFoundError{ID: "acme.x", Version: "^1.0.0"}},
		{"acme.y", "1.0.0", &agents.AgentNotFoundError{ID: "acme.y", Version: "1.0.0"}},
		{"acme.y", "", &agents.AgentNotFoundError{ID: "acme.y"}},
	}
	for _, tc := range tests {
		_, err := r.Get(tc.id, tc.version)
		var e *agents.AgentNotFoundError
		if !errors.As(err, &e) {
			t.Errorf("Get(%q, %q) error = %v, want agent-not-found", tc.id, tc.version, err)
			continue
		}
		if diff := cmp.Diff(tc.want, e); diff != "" {
			t.Errorf("Get(%q, %q) (-want +got):\n%s", tc.id, tc.version, diff)
		}
	}
	if _, err := r.GetLatest("acme.y"); agents.CodeOf(err) != agents.CodeAgentNotFound {
		t.Errorf("GetLatest(unknown) = %v", err)
	}
	if v := r.ListVersions("acme.y"); v != nil {
		t.Errorf("ListVersions(unknown) = %v, want nil", v)
	}
}

func TestAgentsRegisterRefuses(t *testing.T) {
	r, err := NewAgents(ag("acme.x", "1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	err = r.Register(ag("acme.x", "1.0.0"))
	var dup *agents.AgentAlreadyRegisteredError
	if !errors.As(err, &dup) || dup.ID != "acme.x" || dup.Version != "1.0.0" {
		t.Errorf("duplicate: error = %v, want agent-already-registered", err)
	}
	// A different build is a different registration.
	if err := r.Register(ag("acme.x", "1.0.0+build.2")); err != nil {
		t.Errorf("1.0.0+build.2: %v", err)
	}

	tests := []struct {
		a     agent.Agent
		paths []string
	}{
		{ag("acme.x", "v1.0.0"), []string{"version"}},
		{ag("acme.x", "1.0"), []string{"version"}},
		{ag("acme.x", "^1.0.0"), []string{"version"}},
		{ag("acme.x", "01.0.0"), []string{"version"}},
		{ag("acme.x", ""), []string{"version"}},
		{ag("", "1.0.0"), []string{"id"}},
		{ag("", "x"), []string{"id", "version"}},
	}
	for _, tc := range tests {
		err := r.Register(tc.a)
		var inv *agents.InvalidAgentError
		if !errors.As(err, &inv) {
			t.Errorf("Register(%s) error = %v, want invalid-agent", tc.a.Ref(), err)
			continue
		}
		var paths []string
		for _, is := range inv.Issues {
			paths = append(paths, is.Path)
			if is.Message == "" {
				t.Errorf("Register(%s): empty message for %s", tc.a.Ref(), is.Path)
			}
		}
		if diff := cmp.Diff(tc.paths, paths); diff != "" {
			t.Errorf("Register(%s) issue paths (-want +got):\n%s", tc.a.Ref(), diff)
		}
	}
	if diff := cmp.Diff([]string{"1.0.0", "1.0.0+build.2"}, r.ListVersions("acme.x")); diff != "" {
		t.Errorf("refused registrations changed the registry (-want +got):\n%s", diff)
	}

	_, err = NewAgents(ag("acme.x", "1.0.0"), ag("acme.x", "1.0.0"))
	if agents.CodeOf(err) != agents.CodeAgentAlreadyRegistered {
		t.Errorf("NewAgents with a duplicate seed: %v", err)
	}
}

func TestAgentsUnregister(t *testing.T) {
	r, err := NewAgents(ag("acme.x", "1.0.0"), ag("acme.x", "1.1.0"), ag("acme.x", "1.10.0"), ag("acme.y", "1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Unregister("acme.x", "1.10.0"); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.GetLatest("acme.x"); got.Version != "1.1.0" {
		t.Errorf("latest after unregistering 1.10.0 = %s, want 1.1.0", got.Version)
	}
	err = r.Unregister("acme.x", "1.10.0")
	var nf *agents.AgentNotFoundError
	if !errors.As(err, &nf) || nf.Version != "1.10.0" {
		t.Errorf("second Unregister = %v, want agent-not-found", err)
	}
	if err := r.Unregister("acme.x", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.GetLatest("acme.x"); agents.CodeOf(err) != agents.CodeAgentNotFound {
		t.Errorf("acme.x after Unregister(id, \"\") = %v", err)
	}
	if err := r.Unregister("acme.x", ""); agents.CodeOf(err) != agents.CodeAgentNotFound {
		t.Errorf("Unregister of a gone id = %v", err)
	}
	if diff := cmp.Diff([]string{"acme.y@1.0.0"}, refs(r.List())); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	// The last version going removes the id; registering again works.
	if err := r.Unregister("acme.y", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	if got := r.List(); len(got) != 0 {
		t.Errorf("List = %v, want empty", refs(got))
	}
	if err := r.Register(ag("acme.y", "1.0.0")); err != nil {
		t.Fatal(err)
	}
}

func TestAgentsConcurrent(t *testing.T) {
	r, err := NewAgents()
	if err != nil {
		t.Fatal(err)
	}
	const writers, perWriter = 8, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				if err := r.Register(ag("acme.c", fmt.Sprintf("%d.%d.0", w, i))); err != nil {
					t.Error(err)
				}
				if i%5 == 0 {
					if err := r.Unregister("acme.c", fmt.Sprintf("%d.%d.0", w, i)); err != nil {
						t.Error(err)
					}
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range perWriter {
				_, _ = r.GetLatest("acme.c")
				_ = r.ListVersions("acme.c")
				_ = r.List()
				_, _ = r.Get("acme.c", "0.0.0")
			}
		}()
	}
	wg.Wait()
	got := r.ListVersions("acme.c")
	if len(got) != writers*perWriter*4/5 {
		t.Fatalf("%d versions, want %d", len(got), writers*perWriter*4/5)
	}
	if latest, _ := r.GetLatest("acme.c"); latest.Version != fmt.Sprintf("%d.%d.0", writers-1, perWriter-1) {
		t.Errorf("latest = %s", latest.Version)
	}
}
