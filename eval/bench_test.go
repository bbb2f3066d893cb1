package eval_test

import (
	"encoding/json"
	"testing"

	"github.com/kindgi/agents/eval"
	"github.com/kindgi/agents/providers/scripted"
)

// BenchmarkRunReplay evaluates the three recorded cases (one tool call
// each, replayed) with two graders: one op is one eval.Run of three cases.
func BenchmarkRunReplay(b *testing.B) {
	h := newHost(b)
	ds := threeCases(b, h)
	p := scripted.New([]scripted.Response{
		scripted.Call("x1", "acme.lookup-order", json.RawMessage(`{"order":1}`)), scripted.Say("A refund for order 1."),
		scripted.Call("x1", "acme.lookup-order", json.RawMessage(`{"order":2,"verbose":true}`)), scripted.Say("Order 2: refund possible."),
		scripted.Call("x1", "acme.lookup-order", json.RawMessage(`{"order":404}`)), scripted.Say("No order 404, no refund."),
	}, &scripted.Options{Loop: true, DiscardRequests: true})
	opts := eval.Options{Agent: defineAgent(b, "1.1.0", "New."), Bindings: h.bindings(p),
		Graders: []eval.Grader{eval.Contains("refund"), eval.Matches(`(?i)order \d+`)}}
	b.ReportAllocs()
	for b.Loop() {
		rep, err := eval.Run(b.Context(), ds, opts)
		if err != nil || rep.Failed != 0 {
			b.Fatalf("%+v, %v", rep, err)
		}
	}
}
