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
