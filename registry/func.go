package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// FuncTool describes a tool whose handler is a typed Go function (see
// AddFunc): its id, its exact semver version and the description the
// model reads. Its schemas come from the function's types.
type FuncTool struct {
	ID          string
	Version     string
	Description string
}

// AddFunc registers fn as one version of a tool for tenantID, with input
// and output schemas inferred from In and Out by
// github.com/google/jsonschema-go (the library the MCP SDK infers its
// tools' schemas with):
//
//   - a field's JSON name comes from its json tag, and a field tagged
//     json:"-" or unexported is left out;
//   - a field is required unless its json tag has omitempty or omitzero;
//   - a jsonschema:"…" tag is the field's description;
//   - structs are closed (additionalProperties false), slices and
//     pointers also admit null, maps are objects of their element type;
//   - time.Time is a string (as the MCP SDK infers it), json.RawMessage
//     any JSON.
//
// In must be a struct or a map with string keys (a tool's arguments are a
// JSON object). Each call checks the arguments against the input schema
// before fn runs: arguments that break it are an error naming the broken
// rule, which the turn reports to the model as a tool error, and fn is not
// called. Arguments that pass are decoded once into an In; fn's Out is
// encoded once as the output. An error fn returns is returned as is (a tool
// error the model is told of, unless it carries a code); an Out that does
// not encode is *agents.ToolInvocationError.
//
// A type the inference cannot describe (a channel, a func, an interface
// other than any), a nil fn, or what Tools.Add refuses is
// *agents.InvalidMessageError.
func AddFunc[In, Out any](t *Tools, tenantID string, d FuncTool, fn func(ctx context.Context, in In, call bindings.CallContext) (Out, error)) error {
	if fn == nil {
		return &agents.InvalidMessageError{Reason: fmt.Sprintf("tool %s@%s has no function", d.ID, d.Version)}
	}
	in, err := inferSchema[In]()
	if err != nil {
		return &agents.InvalidMessageError{Reason: fmt.Sprintf("tool %s@%s: input type %s: %v", d.ID, d.Version, reflect.TypeFor[In](), err)}
	}
	if in.Type != "object" {
		return &agents.InvalidMessageError{Reason: fmt.Sprintf("tool %s@%s: input type %s is not a struct or a map: a tool's arguments are a JSON object", d.ID, d.Version, reflect.TypeFor[In]())}
	}
	out, err := inferSchema[Out]()
	if err != nil {
		return &agents.InvalidMessageError{Reason: fmt.Sprintf("tool %s@%s: output type %s: %v", d.ID, d.Version, reflect.TypeFor[Out](), err)}
	}
	check, err := in.Resolve(nil)
	if err != nil {
		return &agents.InvalidMessageError{Reason: fmt.Sprintf("tool %s@%s: input schema: %v", d.ID, d.Version, err)}
	}
	inJSON, err := json.Marshal(in)
	if err != nil {
		return &agents.InvalidMessageError{Reason: fmt.Sprintf("tool %s@%s: input schema: %v", d.ID, d.Version, err)}
	}
	outJSON, err := json.Marshal(out)
	if err != nil {
		return &agents.InvalidMessageError{Reason: fmt.Sprintf("tool %s@%s: output schema: %v", d.ID, d.Version, err)}
	}
	h := func(ctx context.Context, input json.RawMessage, call bindings.CallContext) (json.RawMessage, error) {
		var doc any
		if err := json.Unmarshal(input, &doc); err != nil {
			return nil, &argumentsError{msg: "arguments are not JSON"}
		}
		if err := check.Validate(doc); err != nil {
			return nil, &argumentsError{msg: err.Error()}
		}
		var v In
		if err := json.Unmarshal(input, &v); err != nil {
			// The schema admits what the type does not (a number too
			// large for an int field): still the arguments' fault.
			return nil, &argumentsError{msg: err.Error()}
		}
		res, err := fn(ctx, v, call)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(res)
		if err != nil {
			return nil, &agents.ToolInvocationError{ToolID: d.ID, ToolVersion: d.Version, Message: "encode output", Err: err}
		}
		return b, nil
	}
	return t.Add(tenantID, bindings.ToolDescriptor{
		ID: d.ID, Version: d.Version, Description: d.Description, InputSchema: inJSON, OutputSchema: outJSON,
	}, h)
}

// argumentsError reports arguments that break a typed tool's input schema.
// It carries no code: the turn tells the model, which can correct them.
type argumentsError struct{ msg string }

func (e *argumentsError) Error() string { return "invalid arguments: " + e.msg }

// schemaTypes overrides jsonschema-go's inference for a few types.
// The MCP SDK infers its tools' schemas with the same defaults, so a
// typed kindgi tool and an MCP tool of the same types have the same
// schemas; only json.RawMessage, which jsonschema-go would describe as an
// array of bytes, is taken as what it is: any JSON.
var schemaTypes = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {},
}

// inferSchema is the JSON Schema of T.
func inferSchema[T any]() (*jsonschema.Schema, error) {
	return jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: schemaTypes})
}
