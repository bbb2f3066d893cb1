package pack

import (
	"encoding/json"
)

// Version is the protocol version every message carries in v (info carries
// it in protocol).
const Version = 2

// SchemaVersion is the version of the protocol's JSON Schema,
// pack-protocol.schema.json.
const SchemaVersion = "2.2.0"

// SchemaID is the $id of the protocol's JSON Schema.
const SchemaID = "@kindgi/specs/pack-protocol.schema.json"

// Message kinds: the kind field of requests and responses.
const (
	KindInvoke      = "invoke"
	KindCheckInvoke = "check-invoke"
	KindResult      = "result"
	KindCheckResult = "check-result"
	KindError       = "error"
)

// Error codes of an error message: why running pack code didn't produce a
// result.
const (
	CodeInputValidationFailed  = "input-validation-failed"
	CodeOutputValidationFailed = "output-validation-failed"
	CodeHandlerThrow           = "handler-throw"
	CodeHandlerImportFailed    = "handler-import-failed"
	CodeUnknownTool            = "unknown-tool"
	CodeUnknownCheck           = "unknown-check"
	CodeToolVersionMismatch    = "tool-version-mismatch"
	CodeDeadlineExceeded       = "deadline-exceeded"
	CodeCancelled              = "cancelled"
	// CodeInvalidRequest answers a body that is not a valid request message
	// (bad JSON, v other than 2, unknown kind, missing fields), with issues.
	CodeInvalidRequest = "invalid-request"
)

// HTTP header names of the transport.
const (
	// HeaderToken carries the service token on /v1/invoke and /v1/info.
	// Authorization is deliberately not used.
	HeaderToken = "kindgi-pack-token"
	// HeaderTimeoutMs is the relative deadline of the call in milliseconds
	// (default DefaultTimeoutMs).
	HeaderTimeoutMs = "kindgi-timeout-ms"
	// HeaderRunID is the kernel run the call belongs to.
	HeaderRunID = "kindgi-run-id"
	// HeaderRequestID is the individual call.
	HeaderRequestID = "kindgi-request-id"
	// HeaderProtocol is the protocol version the caller speaks.
	HeaderProtocol = "kindgi-protocol"
	// HeaderDurationMs is set on an invoke answer: how long the call ran.
	HeaderDurationMs = "kindgi-duration-ms"
	// HeaderArtifactVersion is set on an invoke answer: the service's
	// artifact version.
	HeaderArtifactVersion = "kindgi-artifact-version"
)

// Transport constants.
const (
	// DefaultTimeoutMs is the deadline a service applies when the request
	// carries no kindgi-timeout-ms header.
	DefaultTimeoutMs = 120000
	// MaxBodyBytes is the largest request body a service accepts (10 MiB);
	// a larger one is answered 413.
	MaxBodyBytes = 10 << 20
	// ContentType is the media type of every message.
	ContentType = "application/json"
)

// HTTP paths of the transport.
const (
	PathInvoke  = "/v1/invoke"
	PathInfo    = "/v1/info"
	PathHealthz = "/healthz"
	PathReadyz  = "/readyz"
)

// CallContext is the per-call context a handler receives. It is
// serializable only: a pack service adds its own cancellation on top.
type CallContext struct {
	// TenantID is the tenant the call runs for (required).
	TenantID string `json:"tenantId"`
	// RunID is the kernel run the call belongs to (required).
	RunID string `json:"runId"`
	// RequestID is the individual call, e.g. the model's tool-call id.
	RequestID string `json:"requestId,omitempty"`
	// Env holds resolved environment values for the call (open).
	Env map[string]any `json:"env,omitzero"`
	// Secrets holds resolved secrets for the call (open).
	Secrets map[string]any `json:"secrets,omitzero"`
	// Config holds resolved configuration for the call (open).
	Config map[string]any `json:"config,omitzero"`
}

// ToolRef names the tool of a ToolInvoke.
type ToolRef struct {
	// ID is the tool id, resolved from the pack service's own index.
	ID string `json:"id"`
	// Version, when set, makes the service refuse a different indexed
	// version (tool-version-mismatch).
	Version string `json:"version,omitempty"`
}

// ToolInvoke is the request to run a tool handler. The service validates
// Input against the indexed input schema, runs the handler and validates its
// return value against the indexed output schema.
type ToolInvoke struct {
	V     int             `json:"v"`
	Kind  string          `json:"kind"`
	Tool  ToolRef         `json:"tool"`
	Input json.RawMessage `json:"input"`
	Ctx   CallContext     `json:"ctx"`
}

// CheckRef names the check of a CheckInvoke.
type CheckRef struct {
	// ID is the check id: the indexed guardrail's checkId, else its id.
	ID string `json:"id"`
}

// CheckInvoke is the request to run a guardrail check: evaluate(config,
// trace).
type CheckInvoke struct {
	V     int      `json:"v"`
	Kind  string   `json:"kind"`
	Check CheckRef `json:"check"`
	// Config is the guardrail's config (a JSON object).
	Config json.RawMessage `json:"config"`
	// Trace is the run trace the check evaluates (a JSON object).
	Trace json.RawMessage `json:"trace"`
}

// ToolResult is the response of a tool handler that ran and returned an
// output valid against the tool's output schema.
type ToolResult struct {
	V      int             `json:"v"`
	Kind   string          `json:"kind"`
	Output json.RawMessage `json:"output"`
}

// CheckResult is the response of a guardrail check that ran.
type CheckResult struct {
	V      int          `json:"v"`
	Kind   string       `json:"kind"`
	Result CheckOutcome `json:"result"`
}

// Cause is the serialized throw of a handler-throw or handler-import-failed
// error: name, message and stack of an error object.
type Cause struct {
	Name    string `json:"name,omitempty"`
	Message string `json:"message,omitempty"`
	Stack   string `json:"stack,omitempty"`
}

// ErrorMessage is the response saying why running pack code didn't produce
// a result. It is a message, not a Go error: the client turns it into an
// *Error whose Response it is.
type ErrorMessage struct {
	V       int    `json:"v"`
	Kind    string `json:"kind"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// ToolID is present when the error is about a tool.
	ToolID string `json:"toolId,omitempty"`
	// CheckID is present when the error is about a check.
	CheckID string `json:"checkId,omitempty"`
	// Cause is the serialized throw for handler-throw and
	// handler-import-failed.
	Cause *Cause `json:"cause,omitempty"`
	// Issues is present for input-validation-failed,
	// output-validation-failed and invalid-request.
	Issues []Issue `json:"issues,omitempty"`
}

// NewError returns an error message with v and kind set.
func NewError(code, message string) *ErrorMessage {
	return &ErrorMessage{V: Version, Kind: KindError, Code: code, Message: message}
}

// String returns "code: message", prefixed with the tool or check id.
func (e *ErrorMessage) String() string {
	s := e.Code + ": " + e.Message
	if e.ToolID != "" {
		s = e.ToolID + ": " + s
	} else if e.CheckID != "" {
		s = e.CheckID + ": " + s
	}
	return s
}

// Issue is one validation issue, Ajv-shaped.
type Issue struct {
	// InstancePath is the JSON Pointer to the failing value: "" for the
	// root, /items/0/name. Always present.
	InstancePath string `json:"instancePath"`
	// SchemaPath is the URI fragment of the failing schema keyword
	// (#/properties/name/type).
	SchemaPath string `json:"schemaPath,omitempty"`
	// Keyword is the failing JSON Schema keyword; absent when the failure
	// did not come from a schema keyword.
	Keyword string `json:"keyword,omitempty"`
	// Params are the keyword's parameters as Ajv reports them (an empty
	// object for keywords without parameters; absent without a keyword).
	Params map[string]any `json:"params,omitzero"`
	// Message is the human-readable message (must have required property
	// 'name').
	Message string `json:"message"`
}

// String returns the instance path and the message.
func (i Issue) String() string {
	if i.InstancePath == "" {
		return i.Message
	}
	return i.InstancePath + ": " + i.Message
}

// InfoTool is one tool of an Info.
type InfoTool struct {
	ID      string `json:"id"`
	Version string `json:"version,omitempty"`
}

// Info is the answer to GET /v1/info.
type Info struct {
	// Protocol is the protocol version, Version.
	Protocol        int        `json:"protocol"`
	PackID          string     `json:"packId"`
	PackVersion     string     `json:"packVersion"`
	ArtifactVersion string     `json:"artifactVersion"`
	Tools           []InfoTool `json:"tools"`
	Checks          []string   `json:"checks"`
	// MissingEnv lists the index's required env names the process lacks
	// (unset or empty), sorted; empty when none is missing.
	MissingEnv []string `json:"missingEnv"`
}

// MarshalJSON writes nil slices as empty arrays, as the schema requires.
func (i Info) MarshalJSON() ([]byte, error) {
	type plain Info
	p := plain(i)
	if p.Tools == nil {
		p.Tools = []InfoTool{}
	}
	if p.Checks == nil {
		p.Checks = []string{}
	}
	if p.MissingEnv == nil {
		p.MissingEnv = []string{}
	}
	return json.Marshal(p)
}
