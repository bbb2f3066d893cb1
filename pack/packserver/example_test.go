package packserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/kindgi/agents/pack"
	"github.com/kindgi/agents/pack/packserver"
)

// A pack service in process: an index, a module registering the tool's
// handler, and one invoke answered by ServeHTTP.
func ExampleNew() {
	idx, err := packserver.ParseIndex([]byte(`{
		"packId": "greetings", "packVersion": "1.0.0", "artifactVersion": "greetings-1",
		"modules": ["hello"],
		"tools": [{"id": "hello.greet", "version": "1.0.0", "module": "hello",
			"inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
			"outputSchema": {"type": "object", "properties": {"greeting": {"type": "string"}}}}]
	}`))
	if err != nil {
		panic(err)
	}
	hello := packserver.Module{Name: "hello", Tools: map[string]packserver.ToolHandler{
		"hello.greet": func(_ context.Context, input json.RawMessage, call pack.CallContext) (any, error) {
			var in struct{ Name string }
			if err := json.Unmarshal(input, &in); err != nil {
				return nil, err
			}
			return map[string]string{"greeting": "Hello, " + in.Name + " (tenant " + call.TenantID + ")"}, nil
		},
	}}
	srv, err := packserver.New(context.Background(), idx, []packserver.Module{hello}, &packserver.Options{Token: "s3cret"})
	if err != nil {
		panic(err)
	}
	for _, input := range []string{`{"name":"Ada"}`, `{}`} {
		req := httptest.NewRequest(http.MethodPost, "/v1/invoke", strings.NewReader(
			`{"v":2,"kind":"invoke","tool":{"id":"hello.greet"},"input":`+input+`,"ctx":{"tenantId":"acme","runId":"r1"}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("kindgi-pack-token", "s3cret")
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Header().Get("kindgi-artifact-version"), rec.Body.String())
	}
	// Output:
	// 200 greetings-1 {"v":2,"kind":"result","output":{"greeting":"Hello, Ada (tenant acme)"}}
	// 200 greetings-1 {"v":2,"kind":"error","code":"input-validation-failed","message":"input of \"hello.greet\" does not match its schema","toolId":"hello.greet","issues":[{"instancePath":"","schemaPath":"#/required","keyword":"required","params":{"missingProperty":"name"},"message":"must have required property 'name'"}]}
}
