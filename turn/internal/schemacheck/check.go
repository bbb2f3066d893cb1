package schemacheck

import (
	"bytes"
	"encoding/json"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ValidateArguments checks a call's arguments against the tool's input
// schema (any JSON object when it has none). It returns a message for the
// model when they do not fit, and an error when the schema itself is
// broken.
func ValidateArguments(d bindings.ToolDescriptor, args json.RawMessage) (string, error) {
	// A simple schema (the usual {type: object, properties, required})
	// answers from the bytes, decoding nothing; anything it cannot vouch
	// for goes through the full validator below.
	if len(d.InputSchema) > 0 {
		if c := compileCached(d.InputSchema); c.err == nil && c.fast != nil && c.fast.FastAccepts(args) {
			return "", nil
		}
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return "arguments are not JSON", nil
	}
	if len(d.InputSchema) == 0 {
		if _, ok := inst.(map[string]any); !ok {
			return "arguments must be a JSON object", nil
		}
		return "", nil
	}
	c := compileCached(d.InputSchema)
	if c.err != nil {
		return "", &agents.ToolInvocationError{ToolID: d.ID, ToolVersion: d.Version, Message: "input schema does not compile", Err: c.err}
	}
	if err := c.sch.Validate(inst); err != nil {
		return err.Error(), nil
	}
	return "", nil
}

// CheckOutput reports a tool's output that breaks its output schema (or,
// with a schema, is not JSON). The caller checks first that out is JSON in
// UTF-8.
func CheckOutput(d bindings.ToolDescriptor, out json.RawMessage) (string, bool) {
	if len(d.OutputSchema) == 0 {
		return "", false
	}
	sch, err := compileSchema(d.OutputSchema)
	if err != nil {
		return "the tool's output schema does not compile: " + err.Error(), true
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
	if err != nil {
		return "the tool's output is not JSON", true
	}
	if err := sch.Validate(inst); err != nil {
		return "the tool's output breaks its schema: " + err.Error(), true
	}
	return "", false
}
