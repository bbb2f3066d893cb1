package bindings_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
)

// fullDescriptor sets every field of a ToolDescriptor, with config nested
// two deep; TestToolDescriptorClone fails when a field is added and not
// set here, so Clone's test keeps up with the type.
func fullDescriptor() bindings.ToolDescriptor {
	no := false
	return bindings.ToolDescriptor{
		ID: "acme.x", Version: "1.0.0", Description: "x",
		InputSchema:  json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object"}`),
		Secrets:      []string{"API_KEY"},
		Env:          map[string]string{"REGION": "eu"},
		Config: map[string]any{
			"limits": map[string]any{"max": 3.0}, "tags": []any{"a", map[string]any{"k": "v"}},
			"raw": json.RawMessage(`1`), "names": []string{"n"}, "labels": map[string]string{"l": "1"},
		},
		Annotations: &bindings.ToolAnnotations{Title: "X", DestructiveHint: &no, OpenWorldHint: &no},
		Gate:        &agent.ToolGate{Mode: agent.GateAlwaysAsk, RequiredRole: "legal"},
	}
}

// mutateDescriptor changes every value d holds through a map, a slice or a
// pointer.
func mutateDescriptor(d *bindings.ToolDescriptor) {
	d.InputSchema[0] = 'X'
	d.OutputSchema[0] = 'X'
	d.Secrets[0] = "OTHER"
	d.Env["REGION"] = "us"
	d.Config["limits"].(map[string]any)["max"] = 99.0
	tags := d.Config["tags"].([]any)
	tags[1].(map[string]any)["k"] = "w"
	tags[0] = "z"
	d.Config["raw"].(json.RawMessage)[0] = '2'
	d.Config["names"].([]string)[0] = "m"
	d.Config["labels"].(map[string]string)["l"] = "2"
	d.Annotations.Title = "Y"
	*d.Annotations.DestructiveHint = true
	*d.Annotations.OpenWorldHint = true
	d.Gate.Mode = agent.GateNeverAsk
}

// TestToolDescriptorClone: a clone equals its original, and changing
// anything the clone reaches through a map, slice or pointer leaves the
// original as it was, and the other way round.
func TestToolDescriptorClone(t *testing.T) {
	v := reflect.ValueOf(fullDescriptor())
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("fullDescriptor leaves %s unset", v.Type().Field(i).Name)
		}
	}
	orig := fullDescriptor()
	clone := orig.Clone()
	if diff := cmp.Diff(orig, clone); diff != "" {
		t.Fatalf("clone differs from the original (-orig +clone):\n%s", diff)
	}
	mutateDescriptor(&clone)
	if diff := cmp.Diff(fullDescriptor(), orig); diff != "" {
		t.Errorf("changing the clone reached the original (-want +got):\n%s", diff)
	}
	orig = fullDescriptor()
	clone = orig.Clone()
	mutateDescriptor(&orig)
	if diff := cmp.Diff(fullDescriptor(), clone); diff != "" {
		t.Errorf("changing the original reached the clone (-want +got):\n%s", diff)
	}
}

// TestToolDescriptorCloneOfEmpty: nil fields stay nil.
func TestToolDescriptorCloneOfEmpty(t *testing.T) {
	d := bindings.ToolDescriptor{ID: "acme.x", Version: "1.0.0"}
	if diff := cmp.Diff(d, d.Clone()); diff != "" {
		t.Errorf("clone of a bare descriptor (-want +got):\n%s", diff)
	}
	if c := d.Clone(); c.Config != nil || c.Env != nil || c.Secrets != nil || c.Annotations != nil || c.Gate != nil {
		t.Errorf("clone = %+v, want nil fields left nil", c)
	}
}
