package registry_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/registry"
)

type searchIn struct {
	Query string   `json:"query" jsonschema:"what to look for"`
	Limit int      `json:"limit,omitempty"`
	Tags  []string `json:"tags,omitempty"`
}

type searchOut struct {
	Hits []string `json:"hits"`
}

func search(in searchIn) searchOut {
	return searchOut{Hits: []string{in.Query, "clause 12.3"}}
}

// BenchmarkToolCall compares a typed tool (AddFunc: schema check, one
// decode into the In, one encode of the Out) with a raw handler doing the
// same decode and encode by hand without the check, both called through
// Tools.Invoke.
func BenchmarkToolCall(b *testing.B) {
	tools := registry.NewTools()
	raw := func(_ context.Context, input json.RawMessage, _ bindings.CallContext) (json.RawMessage, error) {
		var in searchIn
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		return json.Marshal(search(in))
	}
	if err := tools.Add("acme", bindings.ToolDescriptor{ID: "raw", Version: "1.0.0"}, raw); err != nil {
		b.Fatal(err)
	}
	if err := registry.AddFunc(tools, "acme", registry.FuncTool{ID: "func", Version: "1.0.0"},
		func(_ context.Context, in searchIn, _ bindings.CallContext) (searchOut, error) {
			return search(in), nil
		}); err != nil {
		b.Fatal(err)
	}
	tt := tools.ForTenant("acme")
	input := json.RawMessage(`{"query":"indemnity cap","limit":5,"tags":["msa","liability"]}`)
	call := bindings.CallContext{TenantID: "acme", RequestID: "r"}
	for _, id := range []string{"raw", "func"} {
		d := bindings.ToolDescriptor{ID: id, Version: "1.0.0"}
		b.Run(id, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tt.Invoke(b.Context(), d, input, call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
