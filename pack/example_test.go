package pack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/pack"
)

func ExampleSchema_Validate() {
	s, err := pack.CompileSchema(json.RawMessage(`{
		"type": "object",
		"required": ["text"],
		"additionalProperties": false,
		"properties": {"text": {"type": "string"}, "ms": {"type": "integer", "minimum": 0}}
	}`))
	if err != nil {
		panic(err)
	}
	for _, is := range s.Validate(json.RawMessage(`{"ms": -1, "extra": true}`)) {
		fmt.Printf("%q %s %s %v: %s\n", is.InstancePath, is.SchemaPath, is.Keyword, is.Params, is.Message)
	}
	// Output:
	// "" #/additionalProperties additionalProperties map[additionalProperty:extra]: must NOT have additional properties
	// "" #/required required map[missingProperty:text]: must have required property 'text'
	// "/ms" #/properties/ms/minimum minimum map[limit:0]: must be >= 0
}

func ExampleDecodeRequest() {
	_, bad := pack.DecodeRequest([]byte(`{"v": 1, "kind": "check-invoke", "check": {"id": "demo.no-digits"}, "config": {}, "trace": {}}`))
	b, _ := json.Marshal(bad)
	fmt.Println(string(b))
	// Output:
	// {"v":2,"kind":"error","code":"invalid-request","message":"not a valid request message","issues":[{"instancePath":"/v","schemaPath":"#/$defs/version/const","keyword":"const","params":{"allowedValue":2},"message":"must be equal to constant"},{"instancePath":"","schemaPath":"#/$defs/request/allOf/1/if","keyword":"if","params":{"failingKeyword":"then"},"message":"must match \"then\" schema"}]}
}

func ExampleClient_Invoke() {
	// A stand-in pack service that fails every call with a handler throw.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e := pack.NewError(pack.CodeHandlerThrow, "boom")
		e.ToolID = "demo.fail"
		json.NewEncoder(w).Encode(e)
	}))
	defer srv.Close()

	c := pack.NewClient(srv.URL, "token", nil)
	_, err := c.Invoke(context.Background(), pack.InvokeRequest{
		ToolID: "demo.fail",
		Input:  json.RawMessage(`{}`),
		Ctx:    pack.CallContext{TenantID: "acme", RunID: "run-1"},
	})
	fmt.Println(agents.CodeOf(err))
	fmt.Println(err)
	// Output:
	// handler-throw
	// pack: handler-throw [demo.fail]: boom
}
