package schemacheck

import (
	"encoding/json"
	"testing"

	"github.com/kindgi/agents/bindings"
)

// TestValidateArguments pins the message for the model per kind of
// argument, with the fast path and the full validator agreeing.
func TestValidateArguments(t *testing.T) {
	simple := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)
	for _, c := range []struct {
		name, schema, args string
		wantMsg            bool
	}{
		{"no schema: an object", "", `{"a":1}`, false},
		{"no schema: not an object", "", `[1]`, true},
		{"not JSON", string(simple), `{`, true},
		{"fits", string(simple), `{"q":"x"}`, false},
		{"missing required", string(simple), `{}`, true},
		{"wrong type", string(simple), `{"q":1}`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := bindings.ToolDescriptor{ID: "t", Version: "1", InputSchema: json.RawMessage(c.schema)}
			msg, err := ValidateArguments(d, json.RawMessage(c.args))
			if err != nil {
				t.Fatal(err)
			}
			if (msg != "") != c.wantMsg {
				t.Errorf("message %q, want one: %v", msg, c.wantMsg)
			}
		})
	}
	if _, err := ValidateArguments(bindings.ToolDescriptor{InputSchema: json.RawMessage(`{"type":1}`)}, json.RawMessage(`{}`)); err == nil {
		t.Error("a schema that does not compile: no error")
	}
}

// TestCheckOutput pins which outputs break a tool's output schema.
func TestCheckOutput(t *testing.T) {
	d := bindings.ToolDescriptor{OutputSchema: json.RawMessage(`{"type":"object","required":["n"]}`)}
	for out, bad := range map[string]bool{`{"n":1}`: false, `{}`: true, `[]`: true} {
		if _, got := CheckOutput(d, json.RawMessage(out)); got != bad {
			t.Errorf("CheckOutput(%s) = %v, want %v", out, got, bad)
		}
	}
	if _, bad := CheckOutput(bindings.ToolDescriptor{}, json.RawMessage(`[]`)); bad {
		t.Error("no output schema: any JSON fits")
	}
}

// TestCompileCachedOneValuePerText pins that a schema text compiles once.
func TestCompileCachedOneValuePerText(t *testing.T) {
	raw := json.RawMessage(`{"type":"object","title":"cached once"}`)
	if a, b := compileCached(raw), compileCached(append(json.RawMessage(nil), raw...)); a != b {
		t.Error("two compilations of one schema text")
	}
	a, err := OutputSchema(raw)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := OutputSchema(raw); a != b {
		t.Error("two output schema compilations of one text")
	}
}
