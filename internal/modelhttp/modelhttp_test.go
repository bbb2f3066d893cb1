package modelhttp

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSSEReader(t *testing.T) {
	in := ": keep-alive\r\n\r\nevent: ping\ndata: {\"type\": \"ping\"}\n\n" +
		"data:first\rdata: second\r\nid: 7\nretry: 10\n\n" +
		"event: empty\n\n" + // no data: not dispatched
		"data: [DONE]\n\n"
	r := NewSSEReader(strings.NewReader(in))
	var got []Event
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	want := []Event{{Name: "ping", Data: `{"type": "ping"}`}, {Data: "first\nsecond"}, {Data: "[DONE]"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestSSEReaderCutInsideAnEvent(t *testing.T) {
	r := NewSSEReader(strings.NewReader("data: {\"a\":1}\n\ndata: {\"b\""))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestNameMapIsReversibleOnCollision(t *testing.T) {
	long := strings.Repeat("x", 80)
	m := NewNameMap([]string{"a.b", "a_b", long})
	for _, id := range []string{"a.b", "a_b", long} {
		w := m.Encode(id)
		if len(w) > 64 || strings.ContainsAny(w, ".") {
			t.Errorf("Encode(%q) = %q", id, w)
		}
		if got := m.Decode(w); got != id {
			t.Errorf("Decode(Encode(%q)) = %q", id, got)
		}
	}
	if m.Encode("a.b") == m.Encode("a_b") {
		t.Error("two ids share a wire name")
	}
}
