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

func TestLimitStream(t *testing.T) {
	n, err := io.Copy(io.Discard, LimitStream(io.LimitReader(zeros{}, MaxStreamSize+10)))
	if !errors.Is(err, ErrStreamTooLarge) || n != MaxStreamSize {
		t.Fatalf("read %d, err = %v; want %d and ErrStreamTooLarge", n, err, MaxStreamSize)
	}
	if n, err := io.Copy(io.Discard, LimitStream(strings.NewReader("data: x\n\n"))); err != nil || n != 9 {
		t.Fatalf("a short stream: %d, %v", n, err)
	}
}

// FuzzSSEReader: any input ends in events and then an error, without a
// panic, each event's data a part of the input.
func FuzzSSEReader(f *testing.F) {
	f.Add("event: ping\ndata: {}\n\n")
	f.Add(": keep-alive\r\n\r\ndata: a\rdata: b\n\ndata: [DONE]\n\n")
	f.Add("data")
	f.Fuzz(func(t *testing.T, in string) {
		r := NewSSEReader(strings.NewReader(in))
		for i := 0; ; i++ {
			ev, err := r.Next()
			if err != nil {
				return
			}
			if len(ev.Data) > len(in) || i > len(in) {
				t.Fatalf("event %d larger than the input: %q", i, ev.Data)
			}
		}
	})
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
