package packserver

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kindgi/agents/pack"
)

var requestCorpus = []string{
	`{"v":2,"kind":"invoke","tool":{"id":"demo.echo"},"input":{"text":"a"},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"demo.echo","version":"1.0.0"},"input":[1,2.5,"x",null],"ctx":{"tenantId":"t","runId":"r","requestId":"q","env":{"A":1},"secrets":{},"config":{"k":[true]}}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"x"},"input":null,"ctx":{"tenantId":"t","runId":"r"},"extra":1}`,
	`{"v":2,"kind":"check-invoke","check":{"id":"c"},"config":{},"trace":{"response":{"content":"1"}}}`,
	`{"v":2,"kind":"check-invoke","check":{"id":"c"},"config":[],"trace":{}}`,
	`{"v":2,"kind":"invoke","tool":{"id":1},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2.0,"kind":"invoke","tool":{"id":"x"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"V":2,"kind":"invoke","tool":{"id":"x"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"Kind":"invoke","kind":"invoke","tool":{"id":"x"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"x"},"input":{},"ctx":{"tenantId":"t","runId":"r","env":[]}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"x"},"input":{},"ctx":{"TenantId":"t","runId":"r"}}`,
	`{"v":3,"kind":"invoke"}`,
	`{"v":2,"kind":"nope"}`,
	`{"v":2}`,
	`[]`,
	`"invoke"`,
	`{"v":2,"kind":"invoke",`,
	`{"v":2,"kind":"invoke","tool":{"id":"x"},"input":{},"ctx":{"tenantId":"t","runId":"r"}} {}`,
	` { "v" : 2 , "kind" : "invoke" , "tool" : { "id" : "x" } , "input" : { } , "ctx" : { "tenantId" : "t" , "runId" : "r" } } `,
	`{"v":2,"kind":"invok\u0065","tool":{"id":"x\u00e9"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"Tool":{"id":"b"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a","ID":"b"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"input":{},"ctx":{"tenantId":"t","runId":"r","TENANTID":"u"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"input":{},"ctx":{"tenantId":"t","runId":"r","requestId":null}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a","version":null},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"input":{},"ctx":{"tenantId":"t","runId":"r","env":null}}`,
	`{"v":2,"kind":"check-invoke","check":{"id":"c"},"config":{},"trace":null}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"input":"\ud800","ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"input":{"a":1,"a":2},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"v":3,"kind":"invoke","tool":{"id":"a"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	``,
}

// TestDecodeRequestAgreesWithPack: the one-decode path accepts exactly the
// bodies pack.DecodeRequest accepts, decodes them the same, and answers
// the others with pack's own invalid-request message.
func TestDecodeRequestAgreesWithPack(t *testing.T) {
	for _, body := range requestCorpus {
		compareDecoders(t, []byte(body))
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, body := range requestCorpus {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) { compareDecoders(t, body) })
}

func compareDecoders(t *testing.T, body []byte) {
	t.Helper()
	got, gotBad := decodeRequest(body)
	want, wantBad := pack.DecodeRequest(body)
	if diff := cmp.Diff(wantBad, gotBad); diff != "" {
		t.Fatalf("%s: error (-pack +ours):\n%s", body, diff)
	}
	if wantBad != nil {
		return
	}
	var gotMsg any = got.tool
	if got.check != nil {
		gotMsg = got.check
	}
	if diff := cmp.Diff(want, gotMsg); diff != "" {
		t.Fatalf("%s: message (-pack +ours):\n%s", body, diff)
	}
	if got.tool != nil {
		// The decoded input is the request's input.
		a, _ := json.Marshal(got.input)
		var x, y any
		_ = json.Unmarshal(a, &x)
		_ = json.Unmarshal(got.tool.Input, &y)
		if diff := cmp.Diff(y, x); diff != "" {
			t.Fatalf("%s: input (-raw +decoded):\n%s", body, diff)
		}
	}
}
