package pack

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

var benchInvoke = ToolInvoke{V: Version, Kind: KindInvoke, Tool: ToolRef{ID: "demo.echo", Version: "1.0.0"},
	Input: json.RawMessage(`{"text":"hello, world"}`), Ctx: CallContext{TenantID: "t1", RunID: "run-1", RequestID: "call-1"}}

var benchResult = []byte(`{"v":2,"kind":"result","output":{"text":"hello, world"}}`)

func BenchmarkEncodeInvoke(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(benchInvoke); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeRequest(b *testing.B) {
	body, _ := json.Marshal(benchInvoke)
	b.ReportAllocs()
	for b.Loop() {
		if _, em := DecodeRequest(body); em != nil {
			b.Fatal(em)
		}
	}
}

func BenchmarkDecodeResponse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, em := DecodeResponse(benchResult); em != nil {
			b.Fatal(em)
		}
	}
}

func BenchmarkSchemaValidate(b *testing.B) {
	s, err := CompileSchema(json.RawMessage(`{"type":"object","required":["text"],"additionalProperties":false,"properties":{"text":{"type":"string"}}}`))
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, value string }{
		{"valid", `{"text":"hello, world"}`},
		{"invalid", `{"text":1,"extra":true}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			raw := json.RawMessage(bc.value)
			b.ReportAllocs()
			for b.Loop() {
				s.Validate(raw)
			}
		})
	}
}

// BenchmarkClientInvoke is a whole call against a local echo service:
// encode, HTTP round trip, schema-checked decode.
func BenchmarkClientInvoke(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ContentType)
		w.Write(benchResult)
	}))
	defer srv.Close()
	c := NewClient(srv.URL, "token", nil)
	req := InvokeRequest{ToolID: "demo.echo", Version: "1.0.0", Input: benchInvoke.Input, Ctx: benchInvoke.Ctx}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Invoke(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}
