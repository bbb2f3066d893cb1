package packserver

import (
	"bytes"
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
	`{"v":2,"kind":"check-invoke","check":{"id":"c"},"config":{},"trace":null}`,
	`{"v":2,"kind":"invoke","tool":{"id":1},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2.0,"kind":"invoke","tool":{"id":"x"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"V":2,"kind":"invoke","tool":{"id":"x"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"Kind":"invoke","kind":"invoke","tool":{"id":"x"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"x"},"input":{},"ctx":{"tenantId":"t","runId":"r","env":[]}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"x"},"input":{},"ctx":{"TenantId":"t","runId":"r"}}`,
	` { "v" : 2 , "kind" : "invoke" , "tool" : { "id" : "x" } , "input" : { } , "ctx" : { "tenantId" : "t" , "runId" : "r" } } `,
	`{"v":2,"kind":"invok\u0065","tool":{"id":"x\u00e9"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"Tool":{"id":"b"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"T\u006fol":{"id":"b"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	"{\"v\":2,\"kind\":\"invoke\",\"tool\":{\"id\":\"a\"},\"input\":{},\"ctx\":{\"tenantId\":\"t\",\"runId\":\"r\"},\"\u212aind\":\"check-invoke\"}",
	`{"v":2,"kind":"invoke","tool":{"id":"a","ID":"b"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"input":{"s":"\"","Tool":1},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"input":{"s":"\\","Tool":1},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"input":{},"ctx":{"tenantId":"t","runId":"r","TENANTID":"u"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"input":{},"ctx":{"tenantId":"t","runId":"r","requestId":null}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a","version":null},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":null},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"input":{},"ctx":{"tenantId":"t","runId":"r","env":null}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"input":"\ud800","ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"input":{"a":1,"a":2},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"v":3,"kind":"invoke","tool":{"id":"a"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":3,"v":2,"kind":"invoke","tool":{"id":"a"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"input":{},"ctx":{"tenantId":"t","runId":"r"}} {}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"ctx":{"tenantId":"t","runId":"r"}}`,
	// Members named twice: the schema check keeps the last, whole.
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"tool":{"version":"1"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"tool":null,"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"kind":"invoke","tool":{"version":"1"},"tool":{"id":"a"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"input":{},"ctx":{"tenantId":"t","runId":"r"},"ctx":{"tenantId":"t"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"input":{},"ctx":{"runId":"r"},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a","id":1},"input":{},"ctx":{"tenantId":"t","runId":"r","runId":"s"}}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"input":{},"input":[1],"ctx":{"tenantId":"t","runId":"r","env":{"a":1},"env":{"b":2}}}`,
	`{"v":2,"kind":"invoke","kind":"check-invoke","check":{"id":"c"},"check":{"id":"d"},"config":{},"trace":{},"trace":[]}`,
	`{"v":2,"kind":"invoke","tool":{"id":"a"},"t\u006fol":{"version":"1"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`,
	`{"v":3,"kind":"invoke"}`,
	`{"v":2,"kind":"nope"}`,
	`[]`,
	`"invoke"`,
	`{"v":2,"kind":"invoke",`,
	``,
}

// TestFastRequestAgreesWithPack: the fast path accepts only bodies
// pack.DecodeRequest accepts, and decodes them the same.
func TestFastRequestAgreesWithPack(t *testing.T) {
	accepted := 0
	for _, body := range requestCorpus {
		if compareDecoders(t, []byte(body)) {
			accepted++
		}
	}
	if accepted < 7 {
		t.Errorf("the fast path accepted only %d bodies of the corpus", accepted)
	}
}

func FuzzFastRequest(f *testing.F) {
	for _, body := range requestCorpus {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) { compareDecoders(t, body) })
}

// compareDecoders reports whether the fast path accepted body, failing
// when pack disagrees.
func compareDecoders(t *testing.T, body []byte) bool {
	t.Helper()
	got, ok := fastRequest(body)
	if !ok {
		return false
	}
	if issues := pack.ValidateRequest(body); issues != nil {
		t.Fatalf("fast path accepted %q, which the schema rejects: %v", body, issues)
	}
	want, bad := pack.DecodeRequest(body)
	if bad != nil {
		t.Fatalf("fast path accepted %q, which pack refuses: %v", body, bad)
	}
	// Raw members may differ in layout (pack's schema path re-encodes);
	// compare them compacted.
	compact := cmp.Transformer("compact", func(r json.RawMessage) string {
		var b bytes.Buffer
		if json.Compact(&b, r) != nil {
			return "invalid:" + string(r)
		}
		return b.String()
	})
	if diff := cmp.Diff(want, got, compact); diff != "" {
		t.Fatalf("%s: (-pack +fast):\n%s", body, diff)
	}
	return true
}

func TestTokenEqual(t *testing.T) {
	want := []byte("abab-token")
	for _, tt := range []struct {
		got string
		ok  bool
	}{
		{"abab-token", true},
		{"", false},
		{"abab-toke", false},
		{"abab-tokenx", false},
		{"abab-tokenabab-token", false},
		{"ab", false},
		{"abab-tokeN", false},
		{"xbab-token", false},
	} {
		if got := tokenEqual(tt.got, want); got != tt.ok {
			t.Errorf("tokenEqual(%q) = %v, want %v", tt.got, got, tt.ok)
		}
	}
	if tokenEqual("x", nil) {
		t.Error("an empty expected token matched")
	}
}
