package packserver_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/agents/pack"
	"github.com/kindgi/agents/pack/packserver"
)

// stalledCall opens a raw loopback connection, sends the headers of an
// invoke declaring a body of declared bytes, then sent bytes of it, and
// stalls. Extra headers are name, value pairs.
func stalledCall(t *testing.T, h *harness, declared int, sent []byte, extra ...string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", h.http.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var head strings.Builder
	fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: pack\r\nContent-Type: application/json\r\n%s: %s\r\nContent-Length: %d\r\n",
		pack.PathInvoke, pack.HeaderToken, testToken, declared)
	for i := 0; i+1 < len(extra); i += 2 {
		fmt.Fprintf(&head, "%s: %s\r\n", extra[i], extra[i+1])
	}
	head.WriteString("\r\n")
	if _, err := conn.Write(append([]byte(head.String()), sent...)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// stalledAnswer waits (at most 10 s) for what the service does with a
// stalled call: the answer it wrote, or nil when it closed the
// connection without one.
func stalledAnswer(t *testing.T, conn net.Conn) (*http.Response, []byte) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("the stalled call was neither answered nor closed within 10 s")
		}
		return nil, nil
	}
	defer res.Body.Close()
	var body bytes.Buffer
	_, _ = body.ReadFrom(res.Body)
	return res, body.Bytes()
}

// stalledMessage is stalledAnswer for a call that must be answered: the
// answer and its decoded message.
func stalledMessage(t *testing.T, conn net.Conn) (*http.Response, message) {
	t.Helper()
	res, got := stalledAnswer(t, conn)
	if res == nil {
		t.Fatal("the stalled call was closed without an answer")
	}
	m, err := decodeMsg(res.StatusCode, res.Header, got)
	if err != nil {
		t.Fatal(err)
	}
	return res, m
}

// A caller that stalls part-way through its body holds no slot: with a
// cap of 1, other calls are served while it stalls, and it is answered
// deadline-exceeded, with the connection closed, once its own deadline
// has passed.
func TestStalledBodyHoldsNoSlot(t *testing.T) {
	h := newHarness(t, &packserver.Options{MaxConcurrency: 1})
	body := toolCall("demo.echo", "stalled", map[string]any{"text": "never sent in full"})
	start := time.Now()
	conn := stalledCall(t, h, len(body), body[:len(body)/2], pack.HeaderTimeoutMs, "600")
	time.Sleep(50 * time.Millisecond) // let the service take the headers
	for i := range 5 {
		m := h.call(t.Context(), t, toolCall("demo.echo", "", map[string]any{"text": "x"}))
		if m.Kind != "result" {
			t.Fatalf("call %d while another stalls: %+v", i, m)
		}
	}
	if n := h.srv.InFlight(); n != 0 {
		t.Errorf("in flight while only a stalled call is open: %d", n)
	}
	res, m := stalledMessage(t, conn)
	elapsed := time.Since(start)
	if elapsed < 550*time.Millisecond {
		t.Errorf("the stalled call was ended after %v, before its 600 ms deadline", elapsed)
	}
	if m.Code != pack.CodeDeadlineExceeded || !res.Close {
		t.Errorf("stalled call answered %+v (close %v), want deadline-exceeded and Connection: close", m, res.Close)
	}
}

// Without kindgi-timeout-ms the default deadline is two minutes; the body
// timeout bounds the stall instead, and the answer is invalid-request.
func TestStalledBodyBodyTimeout(t *testing.T) {
	h := newHarness(t, &packserver.Options{MaxConcurrency: 1, BodyTimeout: 300 * time.Millisecond})
	body := toolCall("demo.echo", "stalled", map[string]any{"text": "x"})
	start := time.Now()
	conn := stalledCall(t, h, len(body), body[:10])
	m := h.call(t.Context(), t, toolCall("demo.echo", "", map[string]any{"text": "x"}))
	if m.Kind != "result" {
		t.Fatalf("call while another stalls: %+v", m)
	}
	_, m = stalledMessage(t, conn)
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("the stalled call took %v to end, with a 300 ms body timeout", elapsed)
	}
	if m.Code != pack.CodeInvalidRequest || !strings.Contains(m.Message, "did not arrive") {
		t.Errorf("stalled call answered %+v, want invalid-request about the body", m)
	}
}

// Bodies still being read hold at most MaxConcurrency × 10 MiB between
// them: past that a call is answered 503 (and did not run), and calls
// are taken again once the stalled one has ended.
func TestBodiesInTransitAreBounded(t *testing.T) {
	h := newHarness(t, &packserver.Options{MaxConcurrency: 1})
	big := bytes.Repeat([]byte{' '}, 9<<20)
	conn := stalledCall(t, h, pack.MaxBodyBytes, big, pack.HeaderTimeoutMs, "3000")
	time.Sleep(600 * time.Millisecond) // let the service read what was sent
	input := map[string]any{"text": strings.Repeat("y", 2<<20)}
	status, hdr, body := h.post(t.Context(), t, toolCall("probe.count", "refused", input))
	if status != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
		t.Errorf("a 2 MiB call while 9 MiB of another body is in: %d %.200s", status, body)
	}
	if n := h.probe.count("refused"); n != 0 {
		t.Errorf("the refused call ran %d times", n)
	}
	if res, _ := stalledAnswer(t, conn); res != nil && res.StatusCode != 200 {
		t.Errorf("stalled call: status %d", res.StatusCode)
	}
	waitFor(t, func() bool {
		status, _, _ := h.post(t.Context(), t, toolCall("demo.echo", "", input))
		return status == 200
	})
}

// A member named twice is decided as the protocol schema decides it: the
// schema check's decode keeps the last occurrence, whole. The old fast
// decoder merged the occurrences and ran the tool.
func TestDuplicateMembers(t *testing.T) {
	h := newHarness(t, nil)
	const ctx = `"ctx":{"tenantId":"t","runId":"r","requestId":"dup"}`
	tests := []struct {
		name string
		body string
		want string // kind, or the error code
	}{
		{"tool twice, the last without id", `{"v":2,"kind":"invoke","tool":{"id":"probe.count"},"tool":{"version":"0.1.0"},"input":{},` + ctx + `}`, pack.CodeInvalidRequest},
		{"tool twice, the last null", `{"v":2,"kind":"invoke","tool":{"id":"probe.count"},"tool":null,"input":{},` + ctx + `}`, pack.CodeInvalidRequest},
		{"ctx twice, the last without runId", `{"v":2,"kind":"invoke","tool":{"id":"probe.count"},"input":{},` + ctx + `,"ctx":{"tenantId":"t"}}`, pack.CodeInvalidRequest},
		{"check twice, the last without id", `{"v":2,"kind":"check-invoke","check":{"id":"demo.no-digits"},"check":{},"config":{},"trace":{}}`, pack.CodeInvalidRequest},
		{"id twice in tool, the last a number", `{"v":2,"kind":"invoke","tool":{"id":"probe.count","id":7},"input":{},` + ctx + `}`, pack.CodeInvalidRequest},
		{"tool twice, the last valid", `{"v":2,"kind":"invoke","tool":{"version":"x"},"tool":{"id":"probe.count"},"input":{},` + ctx + `}`, "result"},
		{"ctx twice, the last valid", `{"v":2,"kind":"invoke","tool":{"id":"probe.count"},"input":{},"ctx":{"tenantId":1},` + ctx + `}`, "result"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			valid := pack.ValidateRequest([]byte(tt.body)) == nil
			if valid != (tt.want == "result") {
				t.Fatalf("the schema check says valid=%v; the test expects %s", valid, tt.want)
			}
			before := h.probe.count("dup")
			m := h.call(t.Context(), t, []byte(tt.body))
			got := m.Kind
			if m.Kind == "error" {
				got = m.Code
			}
			if got != tt.want {
				t.Errorf("answered %+v, want %s", m, tt.want)
			}
			ran := h.probe.count("dup") - before
			if ran != 0 && tt.want != "result" {
				t.Errorf("the tool ran %d times for a body the schema rejects", ran)
			}
		})
	}
}

// Every kindgi-timeout-ms past what a time.Duration holds is clamped alike,
// however many digits it has; a negative one is refused.
func TestTimeoutHeaderClamped(t *testing.T) {
	h := newHarness(t, nil)
	for _, v := range []string{"9223372036854775807", "99999999999999999999", "999999999999999999999999999999", "+99999999999999999999"} {
		m := h.call(t.Context(), t, toolCall("demo.echo", "", map[string]any{"text": "x"}), pack.HeaderTimeoutMs, v)
		if m.Kind != "result" {
			t.Errorf("%s = %s: %+v, want a result", pack.HeaderTimeoutMs, v, m)
		}
	}
	for _, v := range []string{"-1", "-99999999999999999999", "1e3", "12.5", "soon"} {
		m := h.call(t.Context(), t, toolCall("demo.echo", "", map[string]any{"text": "x"}), pack.HeaderTimeoutMs, v)
		if m.Code != pack.CodeInvalidRequest {
			t.Errorf("%s = %s: %+v, want invalid-request", pack.HeaderTimeoutMs, v, m)
		}
	}
}
