package agent_test

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
)

func TestDefineChecksModelSettings(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	n := func(v int) *int { return &v }
	for _, tc := range []struct {
		name  string
		s     agent.ModelSettings
		paths []string
	}{
		{"valid", agent.ModelSettings{Temperature: f(0), TopP: f(1), MaxOutputTokens: n(1), Stop: []string{"END"}}, nil},
		{"temperature high", agent.ModelSettings{Temperature: f(2.5)}, []string{"modelSettings.temperature"}},
		{"temperature NaN", agent.ModelSettings{Temperature: f(math.NaN())}, []string{"modelSettings.temperature"}},
		{"topP negative", agent.ModelSettings{TopP: f(-0.1)}, []string{"modelSettings.topP"}},
		{"maxOutputTokens zero", agent.ModelSettings{MaxOutputTokens: n(0)}, []string{"modelSettings.maxOutputTokens"}},
		{"too many stops", agent.ModelSettings{Stop: []string{"a", "b", "c", "d", "e"}}, []string{"modelSettings.stop"}},
		{"empty stop", agent.ModelSettings{Stop: []string{"a", ""}}, []string{"modelSettings.stop[1]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := minimalSpec()
			spec.ModelSettings = &tc.s
			a, err := agent.Define(spec)
			var ia *agents.InvalidAgentError
			if tc.paths == nil {
				if err != nil {
					t.Fatal(err)
				}
				if a.ModelSettings == spec.ModelSettings || *a.ModelSettings.Temperature != 0 {
					t.Errorf("settings %+v: want a copy of the spec's", a.ModelSettings)
				}
				return
			}
			if !errors.As(err, &ia) {
				t.Fatalf("err = %v", err)
			}
			var paths []string
			for _, is := range ia.Issues {
				paths = append(paths, is.Path)
			}
			if diff := cmp.Diff(tc.paths, paths); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefineChecksOutput(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		ok           bool
	}{
		{"object schema", `{"type": "object", "properties": {"title": {"type": "string"}}}`, true},
		{"not JSON", `{"type":`, false},
		{"not an object schema", `{"type": "string"}`, false},
		{"boolean schema", `true`, false},
		{"does not compile", `{"type": "object", "properties": {"n": {"type": "integer", "minimum": "one"}}}`, false},
		{"external reference", `{"type": "object", "properties": {"n": {"$ref": "https://example.com/n.json"}}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := minimalSpec()
			spec.Output = json.RawMessage(tc.schema)
			a, err := agent.Define(spec)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				if string(a.Output) != `{"type":"object","properties":{"title":{"type":"string"}}}` {
					t.Errorf("output %s, want it compacted", a.Output)
				}
				return
			}
			var ia *agents.InvalidAgentError
			if !errors.As(err, &ia) || ia.Issues[0].Path != "output" {
				t.Errorf("err = %v, want an issue at output", err)
			}
		})
	}
}

func TestNewFieldsRoundTrip(t *testing.T) {
	spec := minimalSpec()
	temp := 0.3
	spec.ModelSettings = &agent.ModelSettings{Temperature: &temp}
	spec.Output = json.RawMessage(`{"type":"object"}`)
	a, err := agent.Define(spec)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(a)
	var back agent.Spec
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	b, err := agent.Define(back)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if _, err := agent.Parse(raw); err != nil {
		t.Errorf("Parse of an agent with the new fields: %v", err)
	}
	// Empty settings are no settings: the agent is as without them.
	spec = minimalSpec()
	spec.ModelSettings = &agent.ModelSettings{}
	if a, err := agent.Define(spec); err != nil || a.ModelSettings != nil {
		t.Errorf("empty settings: %+v, %v", a.ModelSettings, err)
	}
}
