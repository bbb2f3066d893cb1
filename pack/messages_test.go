package pack

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestProtocolSchemaHeader(t *testing.T) {
	var doc struct {
		Schema        string                     `json:"$schema"`
		ID            string                     `json:"$id"`
		SchemaVersion string                     `json:"x-schema-version"`
		Defs          map[string]json.RawMessage `json:"$defs"`
		OneOf         []map[string]string        `json:"oneOf"`
	}
	if err := json.Unmarshal(ProtocolSchema, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != "https://json-schema.org/draft/2020-12/schema" || doc.ID != SchemaID || doc.SchemaVersion != SchemaVersion {
		t.Errorf("header = %q %q %q", doc.Schema, doc.ID, doc.SchemaVersion)
	}
	var defs []string
	for k := range doc.Defs {
		defs = append(defs, k)
	}
	slices.Sort(defs)
	want := []string{"callContext", "checkInvoke", "checkResult", "error", "errorCode", "info", "issue", "request", "response", "toolInvoke", "toolResult", "version"}
	if diff := cmp.Diff(want, defs); diff != "" {
		t.Errorf("$defs (-want +got):\n%s", diff)
	}
	var top []string
	for _, o := range doc.OneOf {
		top = append(top, o["$ref"])
	}
	if diff := cmp.Diff([]string{"#/$defs/request", "#/$defs/response", "#/$defs/info"}, top); diff != "" {
		t.Errorf("top-level oneOf (-want +got):\n%s", diff)
	}
}

func TestErrorCodesMatchSchema(t *testing.T) {
	var doc struct {
		Defs struct {
			ErrorCode struct {
				Enum []string `json:"enum"`
			} `json:"errorCode"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(ProtocolSchema, &doc); err != nil {
		t.Fatal(err)
	}
	want := []string{CodeInputValidationFailed, CodeOutputValidationFailed, CodeHandlerThrow, CodeHandlerImportFailed,
		CodeUnknownTool, CodeUnknownCheck, CodeToolVersionMismatch, CodeDeadlineExceeded, CodeCancelled, CodeInvalidRequest}
	if diff := cmp.Diff(want, doc.Defs.ErrorCode.Enum); diff != "" {
		t.Errorf("errorCode enum (-want +got):\n%s", diff)
	}
}

// sampleMessages are one message of every kind the Go types produce.
func sampleMessages() map[string]any {
	return map[string]any{
		"invoke": &ToolInvoke{V: Version, Kind: KindInvoke, Tool: ToolRef{ID: "demo.echo", Version: "1.0.0"},
			Input: json.RawMessage(`{"text":"hi"}`),
			Ctx:   CallContext{TenantID: "t1", RunID: "r1", RequestID: "call_1", Env: map[string]any{"A": "b"}, Secrets: map[string]any{}, Config: map[string]any{"k": 1.0}}},
		"invoke-minimal": &ToolInvoke{V: Version, Kind: KindInvoke, Tool: ToolRef{ID: "x"}, Input: json.RawMessage(`{}`), Ctx: CallContext{TenantID: "t", RunID: "r"}},
		"check-invoke": &CheckInvoke{V: Version, Kind: KindCheckInvoke, Check: CheckRef{ID: "demo.no-digits"},
			Config: json.RawMessage(`{}`), Trace: json.RawMessage(`{"response":{"content":"hello"}}`)},
		"result": &ToolResult{V: Version, Kind: KindResult, Output: json.RawMessage(`{"text":"hi"}`)},
		"check-result": &CheckResult{V: Version, Kind: KindCheckResult, Result: CheckOutcome{Passed: false, Reason: "digits",
			JudgeResponse: "no", Attributes: map[string]any{"n": 1.0}, Extra: map[string]json.RawMessage{"score": json.RawMessage(`0.5`)}}},
		"error": &ErrorMessage{V: Version, Kind: KindError, Code: CodeHandlerThrow, Message: "boom", ToolID: "demo.fail",
			Cause: &Cause{Name: "Error", Message: "boom", Stack: "at x"}},
		"error-issues": &ErrorMessage{V: Version, Kind: KindError, Code: CodeInputValidationFailed, Message: "bad input", ToolID: "demo.echo",
			Issues: []Issue{{InstancePath: "", SchemaPath: "#/required", Keyword: "required", Params: map[string]any{"missingProperty": "text"}, Message: "must have required property 'text'"}}},
		"info":       &Info{Protocol: Version, PackID: "demo", PackVersion: "1.0.0", ArtifactVersion: "a1", Tools: []InfoTool{{ID: "demo.echo", Version: "1.0.0"}}, Checks: []string{"demo.no-digits"}, MissingEnv: []string{"DEMO_REGION"}},
		"info-empty": &Info{Protocol: Version, PackID: "demo", PackVersion: "1.0.0", ArtifactVersion: "a1"},
	}
}

func TestMessagesValidateAndRoundTrip(t *testing.T) {
	for name, msg := range sampleMessages() {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(msg)
			if err != nil {
				t.Fatal(err)
			}
			if issues := ValidateMessage(b); issues != nil {
				t.Errorf("ValidateMessage(%s) = %v", b, issues)
			}
			var validate func([]byte) []Issue
			var decode func([]byte) (any, *ErrorMessage)
			switch msg.(type) {
			case *ToolInvoke, *CheckInvoke:
				validate, decode = ValidateRequest, DecodeRequest
			case *Info:
				validate = ValidateInfo
			default:
				validate, decode = ValidateResponse, DecodeResponse
			}
			if issues := validate(b); issues != nil {
				t.Errorf("validate(%s) = %v", b, issues)
			}
			if decode == nil {
				var back Info
				if err := json.Unmarshal(b, &back); err != nil {
					t.Fatal(err)
				}
				b2, _ := json.Marshal(back)
				if string(b2) != string(b) {
					t.Errorf("info round trip: %s != %s", b2, b)
				}
				return
			}
			got, em := decode(b)
			if em != nil {
				t.Fatalf("decode(%s) = %+v", b, em)
			}
			if diff := cmp.Diff(msg, got); diff != "" {
				t.Errorf("decode round trip (-sent +decoded):\n%s", diff)
			}
		})
	}
}

func TestInfoMarshalsEmptyArrays(t *testing.T) {
	b, err := json.Marshal(Info{Protocol: Version, PackID: "p", PackVersion: "1", ArtifactVersion: "a"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"protocol":2,"packId":"p","packVersion":"1","artifactVersion":"a","tools":[],"checks":[],"missingEnv":[]}`
	if string(b) != want {
		t.Errorf("Marshal = %s, want %s", b, want)
	}
}

func TestCheckOutcomeKeepsUnknownFields(t *testing.T) {
	in := `{"passed":true,"reason":"ok","score":0.9,"labels":["a"]}`
	var o CheckOutcome
	if err := json.Unmarshal([]byte(in), &o); err != nil {
		t.Fatal(err)
	}
	want := CheckOutcome{Passed: true, Reason: "ok", Extra: map[string]json.RawMessage{"score": json.RawMessage(`0.9`), "labels": json.RawMessage(`["a"]`)}}
	if diff := cmp.Diff(want, o); diff != "" {
		t.Errorf("Unmarshal (-want +got):\n%s", diff)
	}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"labels":["a"],"passed":true,"reason":"ok","score":0.9}` {
		t.Errorf("Marshal = %s", b)
	}
	// A listed name in Extra does not override the field.
	o.Extra["passed"] = json.RawMessage(`false`)
	b, _ = json.Marshal(o)
	if string(b) != `{"labels":["a"],"passed":true,"reason":"ok","score":0.9}` {
		t.Errorf("Marshal with a listed name in Extra = %s", b)
	}
}

func TestDecodeRequestInvalid(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []Issue
	}{
		{
			name: "bad JSON",
			body: `{"v":2,`,
			want: []Issue{{InstancePath: "", Message: "must be valid JSON: unexpected EOF"}},
		},
		{
			name: "not an object",
			body: `[]`,
			want: []Issue{{InstancePath: "", SchemaPath: "#/$defs/request/type", Keyword: "type", Params: map[string]any{"type": "object"}, Message: "must be object"}},
		},
		{
			name: "v other than 2",
			body: `{"v":1,"kind":"invoke","tool":{"id":"x"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
			want: []Issue{
				{InstancePath: "/v", SchemaPath: "#/$defs/version/const", Keyword: "const", Params: map[string]any{"allowedValue": float64(2)}, Message: "must be equal to constant"},
				{InstancePath: "", SchemaPath: "#/$defs/request/allOf/0/if", Keyword: "if", Params: map[string]any{"failingKeyword": "then"}, Message: `must match "then" schema`},
			},
		},
		{
			name: "unknown kind",
			body: `{"v":2,"kind":"explode"}`,
			want: []Issue{{InstancePath: "/kind", SchemaPath: "#/$defs/request/properties/kind/enum", Keyword: "enum",
				Params: map[string]any{"allowedValues": []any{"invoke", "check-invoke"}}, Message: "must be equal to one of the allowed values"}},
		},
		{
			name: "missing kind",
			body: `{"v":2}`,
			want: []Issue{{InstancePath: "", SchemaPath: "#/$defs/request/required", Keyword: "required", Params: map[string]any{"missingProperty": "kind"}, Message: "must have required property 'kind'"}},
		},
		{
			name: "missing fields of an invoke",
			body: `{"v":2,"kind":"invoke","tool":{},"ctx":{"tenantId":"t"}}`,
			want: []Issue{
				{InstancePath: "", SchemaPath: "#/$defs/toolInvoke/required", Keyword: "required", Params: map[string]any{"missingProperty": "input"}, Message: "must have required property 'input'"},
				{InstancePath: "/ctx", SchemaPath: "#/$defs/callContext/required", Keyword: "required", Params: map[string]any{"missingProperty": "runId"}, Message: "must have required property 'runId'"},
				{InstancePath: "/tool", SchemaPath: "#/$defs/toolInvoke/properties/tool/required", Keyword: "required", Params: map[string]any{"missingProperty": "id"}, Message: "must have required property 'id'"},
				{InstancePath: "", SchemaPath: "#/$defs/request/allOf/0/if", Keyword: "if", Params: map[string]any{"failingKeyword": "then"}, Message: `must match "then" schema`},
			},
		},
		{
			name: "check-invoke with a wrong type",
			body: `{"v":2,"kind":"check-invoke","check":{"id":"c"},"config":[],"trace":{}}`,
			want: []Issue{
				{InstancePath: "/config", SchemaPath: "#/$defs/checkInvoke/properties/config/type", Keyword: "type", Params: map[string]any{"type": "object"}, Message: "must be object"},
				{InstancePath: "", SchemaPath: "#/$defs/request/allOf/1/if", Keyword: "if", Params: map[string]any{"failingKeyword": "then"}, Message: `must match "then" schema`},
			},
		},
		{
			name: "a response is not a request",
			body: `{"v":2,"kind":"result","output":{}}`,
			want: []Issue{{InstancePath: "/kind", SchemaPath: "#/$defs/request/properties/kind/enum", Keyword: "enum",
				Params: map[string]any{"allowedValues": []any{"invoke", "check-invoke"}}, Message: "must be equal to one of the allowed values"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, em := DecodeRequest([]byte(tt.body))
			if msg != nil || em == nil {
				t.Fatalf("DecodeRequest = %v, %v; want an error message", msg, em)
			}
			if em.V != Version || em.Kind != KindError || em.Code != CodeInvalidRequest || em.Message == "" {
				t.Errorf("error message = %+v", em)
			}
			if diff := cmp.Diff(tt.want, em.Issues); diff != "" {
				t.Errorf("issues (-want +got):\n%s", diff)
			}
			b, err := json.Marshal(em)
			if err != nil {
				t.Fatal(err)
			}
			if issues := ValidateResponse(b); issues != nil {
				t.Errorf("the invalid-request answer is not a valid response: %v", issues)
			}
		})
	}
}

func TestDecodeResponseInvalid(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{"bad JSON", `nope`},
		{"unknown kind", `{"v":2,"kind":"invoke"}`},
		{"unknown error code", `{"v":2,"kind":"error","code":"exploded","message":"m"}`},
		{"result without output", `{"v":2,"kind":"result"}`},
		{"check-result without passed", `{"v":2,"kind":"check-result","result":{}}`},
		{"issue without instancePath", `{"v":2,"kind":"error","code":"input-validation-failed","message":"m","issues":[{"message":"x"}]}`},
		{"wrong version", `{"v":3,"kind":"result","output":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, em := DecodeResponse([]byte(tt.body))
			if msg != nil || em == nil || em.Code != CodeInvalidRequest || len(em.Issues) == 0 {
				t.Errorf("DecodeResponse(%s) = %v, %+v; want invalid with issues", tt.body, msg, em)
			}
		})
	}
}

func TestValidateInfo(t *testing.T) {
	if issues := ValidateInfo([]byte(`{"protocol":2,"packId":"p","packVersion":"1","artifactVersion":"a","tools":[{"version":"1"}],"checks":[1]}`)); len(issues) != 2 {
		t.Errorf("ValidateInfo = %v, want 2 issues", issues)
	}
	if issues := ValidateInfo([]byte(`{"protocol":2,"packId":"p","packVersion":"1","artifactVersion":"a","tools":[],"checks":[]}`)); issues != nil {
		t.Errorf("ValidateInfo(minimal) = %v", issues)
	}
}

func TestDecodeFastAndSchemaPathsAgree(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{"v written 2.0", `{"v":2.0,"kind":"invoke","tool":{"id":"x"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`},
		{"kind with an escape", `{"v":2,"kind":"\u0069nvoke","tool":{"id":"x"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`},
		{"whitespace everywhere", " {\n \"v\" : 2 , \"kind\" : \"invoke\", \"tool\": {\"id\":\"x\"}, \"input\": [1], \"ctx\": {\"tenantId\":\"t\",\"runId\":\"r\"} } "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, em := DecodeRequest([]byte(tt.body))
			if em != nil {
				t.Fatalf("DecodeRequest = %+v", em)
			}
			inv, ok := msg.(*ToolInvoke)
			if !ok || inv.Tool.ID != "x" || inv.Ctx.RunID != "r" || inv.V != Version {
				t.Errorf("msg = %+v", msg)
			}
		})
	}
	// Field names are exact: a differently cased duplicate does not win.
	msg, em := DecodeResponse([]byte(`{"v":2,"kind":"check-result","result":{"passed":true,"Passed":false}}`))
	if em != nil {
		t.Fatal(em)
	}
	want := &CheckResult{V: Version, Kind: KindCheckResult, Result: CheckOutcome{Passed: true, Extra: map[string]json.RawMessage{"Passed": json.RawMessage(`false`)}}}
	if diff := cmp.Diff(want, msg); diff != "" {
		t.Errorf("DecodeResponse (-want +got):\n%s", diff)
	}
}
