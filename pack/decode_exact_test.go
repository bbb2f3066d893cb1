package pack

import "testing"

// The slow path (v written 2.0 skips the fast path) must decode the values
// the schema checked, not case variants encoding/json would also accept.
func TestDecodeRequestIgnoresCaseVariantKeys(t *testing.T) {
	body := []byte(`{"v":2.0,"kind":"invoke","tool":{"id":"demo.echo","ID":"demo.evil","Version":"9.9.9"},
"input":{"text":"hi"},"ctx":{"tenantId":"acme","TenantID":"globex","runId":"r1"}}`)
	msg, bad := DecodeRequest(body)
	if bad != nil {
		t.Fatalf("DecodeRequest: %+v", bad)
	}
	inv, ok := msg.(*ToolInvoke)
	if !ok {
		t.Fatalf("msg = %T", msg)
	}
	if inv.Tool.ID != "demo.echo" || inv.Tool.Version != "" || inv.Ctx.TenantID != "acme" || inv.Ctx.RunID != "r1" {
		t.Errorf("decoded %+v / %+v", inv.Tool, inv.Ctx)
	}
}

func TestDecodeResponseIgnoresCaseVariantKeys(t *testing.T) {
	body := []byte(`{"v":2.0,"kind":"error","code":"handler-throw","Code":"cancelled","message":"boom",
"cause":{"name":"Error","Name":"Other","message":"boom"}}`)
	msg, bad := DecodeResponse(body)
	if bad != nil {
		t.Fatalf("DecodeResponse: %+v", bad)
	}
	e, ok := msg.(*ErrorMessage)
	if !ok || e.Code != CodeHandlerThrow || e.Cause == nil || e.Cause.Name != "Error" {
		t.Errorf("decoded %+v (cause %+v)", msg, e.Cause)
	}
}
