// Package pack speaks pack protocol v2: the messages a runtime exchanges
// with a pack service to run pack code (tool handlers and guardrail
// checks), the protocol's JSON Schema, an HTTP client, and adapters that
// make a pack service a tool source and a guardrail check source for a
// turn.
//
// # Messages
//
// Every definition of the protocol has a Go type with the schema's JSON
// names: the requests ToolInvoke and CheckInvoke, the responses ToolResult,
// CheckResult and ErrorMessage, Info (GET /v1/info), Issue and CallContext.
// Requests and responses carry v: 2 (Version). DecodeRequest and
// DecodeResponse validate a body against the schema before decoding it; a
// body that is not a valid message gives an invalid-request ErrorMessage
// with Ajv-shaped issues, ready to be answered with status 200.
//
// # Schema
//
// ProtocolSchema is pack-protocol.schema.json (schema version 2.2.0, $id
// @kindgi/specs/pack-protocol.schema.json, draft 2020-12), embedded and
// compiled once. ValidateRequest, ValidateResponse, ValidateInfo and
// ValidateMessage check a body against one definition. The request and
// response definitions tell their alternatives apart by kind (if/then on
// kind) rather than with a bare oneOf, so the issues of a bad message name
// the fields of the kind it claims to be.
//
// CompileSchema compiles a tool's input or output schema; Schema.Validate
// reports its failures the way Ajv does with allErrors: one Issue per
// failure, with instancePath (a JSON Pointer, "" for the root), schemaPath
// (#/properties/name/type), keyword, params and message as Ajv writes them
// — required → {missingProperty}, additionalProperties →
// {additionalProperty}, type → {type}, enum → {allowedValues}, limits →
// {limit}, pattern → {pattern}, format → {format} (formats are asserted).
// A failed anyOf, oneOf or then/else is reported after the failures of its
// branches. Issue numbers are float64, as encoding/json decodes them, so an
// issue round-trips through JSON unchanged.
//
// # Client
//
// Client calls a pack service: Invoke, Check, Info, Healthz and Readyz. It
// sends kindgi-pack-token, kindgi-protocol, kindgi-timeout-ms (from the
// context's deadline), kindgi-run-id and kindgi-request-id. It retries only
// a call that provably did not run — a 503, after the wait Retry-After
// asks for (capped, and never past the context's deadline), or a dial that
// failed before anything was sent — and never a 200 error message or a
// connection that failed once the request may have been written. Every
// failure is an *Error with a stable code (agents.CodeOf reads it): a
// transport code for a status (401 unauthorized, 404 not-found, 405
// method-not-allowed, 413 payload-too-large, 415 unsupported-media-type,
// 500 service-error, 503 unavailable), the code of a 200 error message
// (handler-throw, input-validation-failed, …, with the message in
// Response), invalid-response, transport-error, or deadline-exceeded /
// cancelled when the caller's context ended.
//
// # Adapters
//
// ToolSource implements bindings.ToolRegistry with the tools and versions
// a service lists in /v1/info (ranges resolved with npm's rules by
// registry.ResolveVersion); its calls are invokes. /v1/info carries no
// schemas, so descriptors have empty input and output schemas unless
// ToolSourceOptions.Describe supplies them; the service validates against
// its own index either way. CheckSource implements bindings.CheckRegistry
// with the service's check ids; each check runs as a check-invoke with the
// run trace.
package pack
