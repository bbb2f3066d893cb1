package tmpl

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// renderWithin renders src with vars and fails the test when the render
// has not returned after d (an unmetered operation in a loop runs for
// hours; the goroutine is then left behind, the test failing anyway).
func renderWithin(t *testing.T, d time.Duration, src string, vars map[string]any) (string, error) {
	t.Helper()
	tp, err := Parse(src)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := tp.Render(vars)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-time.After(d):
		t.Fatalf("rendering %q did not stop within %v", src, d)
		return "", nil
	}
}

// TestRenderMetersEveryOperation: each operation of a render is charged to
// the work budget, so a loop of operations that are cheap to write but
// costly to run (comparisons of lists, contains, case/when, filters over
// lists and strings) stops with the work bound instead of running for
// hours. Before, only bytes written and filter values were charged: a loop
// comparing two 40,000-item lists ran for about 1.7 hours.
func TestRenderMetersEveryOperation(t *testing.T) {
	letters := strings.Repeat("ab", 20_000)
	vars := map[string]any{
		"p":    letters,
		"list": strings.Split(letters, ""),
		"recs": func() []any {
			r := make([]any, 5000)
			for i := range r {
				r[i] = map[string]any{"k": "v", "n": i}
			}
			return r
		}(),
	}
	loop := func(body string) string {
		return `{% for i in (1..100000) %}` + body + `{% endfor %}`
	}
	split := `{% assign a = p | split: "" %}`
	tests := []struct{ name, src string }{
		{"list equality", split + loop(`{% if a == a %}{% endif %}`)},
		{"list inequality", split + loop(`{% if a != list %}{% endif %}`)},
		{"list less than", loop(`{% if list < list %}{% endif %}`)},
		{"string comparison", loop(`{% if p == p %}{% endif %}`)},
		{"list contains", loop(`{% if list contains "z" %}{% endif %}`)},
		{"string contains", loop(`{% if p contains "abba" %}{% endif %}`)},
		{"unless", loop(`{% unless list == list %}{% endunless %}`)},
		{"elsif", loop(`{% if false %}{% elsif list == list %}{% endif %}`)},
		{"case when", loop(`{% case list %}{% when list %}{% when p %}{% endcase %}`)},
		{"repeated operand", loop(`{% if p == p and p == p and p == p and p == p %}{% endif %}`)},
		{"property path", `{% assign m = recs | first %}` + loop(`{% if recs == recs %}{% endif %}`)},
		{"sort", loop(`{% assign b = list | sort %}`)},
		{"sort_natural", loop(`{% assign b = list | sort_natural %}`)},
		{"uniq", loop(`{% assign b = list | uniq %}`)},
		{"uniq of maps", loop(`{% assign b = recs | uniq %}`)},
		{"join", loop(`{% assign b = list | join: "," %}`)},
		{"split", loop(`{% assign b = p | split: "" %}`)},
		{"map", loop(`{% assign b = recs | map: "k" %}`)},
		{"where", loop(`{% assign b = recs | where: "k", "v" %}`)},
		{"append", loop(`{% assign b = p | append: "x" %}`)},
		{"reverse", loop(`{% assign b = list | reverse %}`)},
		{"compact", loop(`{% assign b = list | compact %}`)},
		{"size", loop(`{% if list.size > 0 %}{% endif %}`)},
		{"output of a comparison", loop(`{{ list == list }}`)},
		{"empty body nodes", loop(strings.Repeat(`{% if i %}{% endif %}`, 200))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := renderWithin(t, 20*time.Second, tt.src, vars)
			var le *LimitError
			if !errors.As(err, &le) {
				t.Fatalf("Render error = %v, want a LimitError", err)
			}
		})
	}
}

// TestRenderWorkCountsNodes: a render is charged NodeCost per node run, so
// a loop of many cheap tags stops at the work bound while a plain loop of
// the same length still renders.
func TestRenderWorkCountsNodes(t *testing.T) {
	out, err := renderWithin(t, 20*time.Second, `{% for i in (1..50000) %}{{ i }}{% endfor %}`, nil)
	if err != nil || len(out) == 0 {
		t.Fatalf("plain loop: %v", err)
	}
	_, err = renderWithin(t, 20*time.Second, `{% for i in (1..50000) %}`+strings.Repeat(`{{ i }}`, 20)+`{% endfor %}`, nil)
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "work" {
		t.Fatalf("Render error = %v, want the work bound", err)
	}
}

// doneAfter is a context whose Done channel is closed from its n-th call
// on: a cancellation that arrives in the middle of a render, at a
// deterministic point.
type doneAfter struct {
	context.Context
	calls, n int
	closed   chan struct{}
}

func newDoneAfter(n int) *doneAfter {
	c := make(chan struct{})
	close(c)
	return &doneAfter{Context: context.Background(), n: n, closed: c}
}

func (d *doneAfter) Done() <-chan struct{} {
	d.calls++
	if d.calls >= d.n {
		return d.closed
	}
	return nil
}

func (d *doneAfter) Err() error {
	if d.calls >= d.n {
		return context.Canceled
	}
	return nil
}

func TestRenderContextStopsWhenDone(t *testing.T) {
	tp, err := Parse(`{% for i in (1..1000) %}{{ i }}{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	ctx := newDoneAfter(100)
	out, err := tp.RenderContext(ctx, nil)
	if !errors.Is(err, context.Canceled) || out != "" {
		t.Fatalf("RenderContext = %q, %v; want context.Canceled", out, err)
	}
	if ctx.calls > 101 {
		t.Errorf("the render went on after its context was done (%d looks)", ctx.calls)
	}

	// A context done before the render starts stops it at once.
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tp.RenderContext(cctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("RenderContext with a cancelled context = %v", err)
	}
	// A live context changes nothing.
	out, err = tp.RenderContext(context.Background(), nil)
	if err != nil || !strings.HasPrefix(out, "123") {
		t.Fatalf("RenderContext = %.10q, %v", out, err)
	}
}

// TestRenderContextDeadline: a deadline stops even a render whose every
// node is cheap, well before the render's own bounds.
func TestRenderContextDeadline(t *testing.T) {
	tp, err := Parse(`{% for i in (1..100000) %}{% for j in (1..100000) %}{% endfor %}{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	if _, err := tp.RenderContext(ctx, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RenderContext = %v, want context.DeadlineExceeded", err)
	}
}

// TestPanicMessageHasNoStack: osteele/liquid re-panics an error raised
// while evaluating an expression with its stack trace appended; the
// message a render reports keeps the cause alone.
func TestPanicMessageHasNoStack(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"string", "boom", "boom"},
		{"error", errors.New("index out of range"), "index out of range"},
		{"stack text", errors.New("bad value\nOriginal stacktrace:\ngoroutine 1 [running]:\nmain.main()"), "bad value"},
		{"goroutine dump", "bad\ngoroutine 7 [running]:\nx.go:1", "bad"},
		{"cause", causer{errors.New("the cause")}, "the cause"},
	}
	for _, tt := range tests {
		if got := panicMessage(tt.v); got != tt.want {
			t.Errorf("%s: panicMessage = %q, want %q", tt.name, got, tt.want)
		}
	}
}

type causer struct{ cause error }

func (c causer) Error() string {
	return c.cause.Error() + "\nOriginal stacktrace:\ngoroutine 1 [running]:"
}
func (c causer) Cause() error { return c.cause }

// TestRenderMetersInsideBlocks: the nodes inside every block are metered,
// the first branch of an if or unless included (osteele/liquid renders it
// from the copy of the block its compiler kept).
func TestRenderMetersInsideBlocks(t *testing.T) {
	for _, src := range []string{
		`{% if true %}{% for i in (1..200000000) %}{% endfor %}{% endif %}`,
		`{% unless false %}{% for i in (1..200000000) %}{% endfor %}{% endunless %}`,
		`{% if false %}{% else %}{% for i in (1..200000000) %}{% endfor %}{% endif %}`,
		`{% case 1 %}{% when 1 %}{% for i in (1..200000000) %}{% endfor %}{% endcase %}`,
		`{% capture c %}{% for i in (1..200000000) %}{% endfor %}{% endcapture %}`,
	} {
		_, err := renderWithin(t, 20*time.Second, src, nil)
		var le *LimitError
		if !errors.As(err, &le) || le.Limit != "iterations" {
			t.Errorf("%s: Render error = %v, want the iterations bound", src, err)
		}
	}
	// Outputs inside an if are checked for undefined variables by the
	// probes, which name the variable.
	_, err := renderWithin(t, 20*time.Second, `{% if true %}{{ nope.x }}{% endif %}`, nil)
	var ue *UndefinedError
	if !errors.As(err, &ue) || ue.Name != "nope" {
		t.Errorf("Render error = %v, want undefined nope", err)
	}
}
