package pack

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ProtocolSchema is the protocol's JSON Schema, pack-protocol.schema.json
// (draft 2020-12, $id SchemaID, schema version SchemaVersion).
//
//go:embed pack-protocol.schema.json
var ProtocolSchema []byte

// protocolURL is the URL the protocol schema is compiled under.
const protocolURL = "urn:kindgi:pack-protocol.schema.json"

// protocol holds the compiled definitions, compiled once on first use.
var protocol = sync.OnceValue(func() *protocolSchemas {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(ProtocolSchema))
	if err != nil {
		panic(fmt.Sprintf("pack: embedded protocol schema: %v", err))
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.UseLoader(noLoader{})
	if err := c.AddResource(protocolURL, doc); err != nil {
		panic(fmt.Sprintf("pack: embedded protocol schema: %v", err))
	}
	def := func(name string) *jsonschema.Schema {
		loc := protocolURL
		if name != "" {
			loc += "#/$defs/" + name
		}
		return c.MustCompile(loc)
	}
	return &protocolSchemas{
		doc:      doc,
		message:  def(""),
		request:  def("request"),
		response: def("response"),
		info:     def("info"),
	}
})

// protocolSchemas are the compiled entry points of the protocol schema.
type protocolSchemas struct {
	doc                              any
	message, request, response, info *jsonschema.Schema
}

// ValidateMessage validates body against the whole protocol schema (a
// request, a response or an info) and returns its issues; nil when valid.
func ValidateMessage(body []byte) []Issue { return validateRaw(protocol().message, body) }

// ValidateRequest validates body as a request message (toolInvoke or
// checkInvoke) and returns its issues; nil when valid.
func ValidateRequest(body []byte) []Issue { return validateRaw(protocol().request, body) }

// ValidateResponse validates body as a response message (toolResult,
// checkResult or error) and returns its issues; nil when valid.
func ValidateResponse(body []byte) []Issue { return validateRaw(protocol().response, body) }

// ValidateInfo validates body as an info message and returns its issues;
// nil when valid.
func ValidateInfo(body []byte) []Issue { return validateRaw(protocol().info, body) }

func validateRaw(sch *jsonschema.Schema, body []byte) []Issue {
	inst, issue := instance(json.RawMessage(body))
	if issue != nil {
		return []Issue{*issue}
	}
	return validate(sch, protocol().doc, protocolURL, inst)
}

// DecodeRequest validates body against the request definition and decodes
// it into a *ToolInvoke or a *CheckInvoke. A body that is not a valid
// request (bad JSON, v other than 2, unknown kind, missing fields) gives an
// invalid-request error message carrying the issues, ready to be answered.
func DecodeRequest(body []byte) (any, *ErrorMessage) {
	if issues := ValidateRequest(body); issues != nil {
		return nil, invalid("not a valid request message", issues)
	}
	var head struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return nil, invalid("not a valid request message: "+err.Error(), nil)
	}
	var msg any
	switch head.Kind {
	case KindInvoke:
		msg = new(ToolInvoke)
	case KindCheckInvoke:
		msg = new(CheckInvoke)
	default:
		return nil, invalid("unknown request kind "+head.Kind, nil)
	}
	if err := json.Unmarshal(body, msg); err != nil {
		return nil, invalid("not a valid request message: "+err.Error(), nil)
	}
	return msg, nil
}

// DecodeResponse validates body against the response definition and
// decodes it into a *ToolResult, a *CheckResult or an *ErrorMessage. A
// body that is not a valid response gives an invalid-request error message
// carrying the issues (the client reports it as a service error).
func DecodeResponse(body []byte) (any, *ErrorMessage) {
	if issues := ValidateResponse(body); issues != nil {
		return nil, invalid("not a valid response message", issues)
	}
	var head struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return nil, invalid("not a valid response message: "+err.Error(), nil)
	}
	var msg any
	switch head.Kind {
	case KindResult:
		msg = new(ToolResult)
	case KindCheckResult:
		msg = new(CheckResult)
	case KindError:
		msg = new(ErrorMessage)
	default:
		return nil, invalid("unknown response kind "+head.Kind, nil)
	}
	if err := json.Unmarshal(body, msg); err != nil {
		return nil, invalid("not a valid response message: "+err.Error(), nil)
	}
	return msg, nil
}

// invalid returns an invalid-request error message. A nil issues list gets
// one root issue holding the message, so the answer always says what is
// wrong.
func invalid(message string, issues []Issue) *ErrorMessage {
	if issues == nil {
		issues = []Issue{{InstancePath: "", Message: message}}
	}
	e := NewError(CodeInvalidRequest, message)
	e.Issues = issues
	return e
}
