package prompt_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/prompt"
)

// Bounds of one render of any template agent.Define accepts (issue 10,
// point 4): FuzzRenderBounded fails past them. The time is thread CPU
// time in an ordinary build; the race detector multiplies the cost of
// every memory access (5–10× by its documentation), so under -race the
// bound is scaled by raceSlowdown.
const (
	boundTime  = time.Second * raceSlowdown
	boundBytes = 64 << 20
)

// boundedVars are the values the fuzzed templates can read: a string, a
// long string, a list of 40,000 strings and a list of 5,000 maps.
var boundedVars = func() map[string]any {
	long := strings.Repeat("ab", 20_000)
	recs := make([]any, 5000)
	for i := range recs {
		recs[i] = map[string]any{"k": "v", "n": i, "tags": []any{"a", "b"}}
	}
	return map[string]any{"long": long, "list": strings.Split(long, ""), "recs": recs}
}()

var allocsMetric = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}

func allocatedBytes() uint64 {
	metrics.Read(allocsMetric)
	return allocsMetric[0].Value.Uint64()
}

// FuzzRenderBounded: any template that agent.Define accepts renders, or
// fails with render-failure or missing-parameter, within one second and
// 64 MiB allocated — parse included (every fuzzed template misses the
// cache). The time is the CPU time of the rendering thread (on Linux), so
// the check holds whatever else the machine runs; note that a fuzzing
// build is instrumented for coverage and runs the engine several times
// slower than a normal one, so the bound holds there with room to spare.
// Seeds are the shapes that used to run for hours or parse into hundreds
// of MiB. KINDGI_FUZZ_TRACE=FILE appends each render's figures to FILE.
func FuzzRenderBounded(f *testing.F) {
	seeds := []string{
		`{% for i in (1..100000) %}{% if list == list %}{% endif %}{% endfor %}`,
		`{% for i in (1..100000) %}{% if list contains "z" %}{% endif %}{% endfor %}`,
		`{% for i in (1..100000) %}{% case list %}{% when list %}{% endcase %}{% endfor %}`,
		`{% for i in (1..100000) %}{% assign b = list | sort | uniq | join: "," | split: "," %}{% endfor %}`,
		`{% for i in (1..100000) %}{% assign b = recs | where: "k", "v" | map: "n" %}{% endfor %}`,
		`{% for i in (1..100000) %}{% assign b = recs | uniq %}{% endfor %}`,
		`{% for i in (1..100000) %}{% capture c %}{{ long }}{{ long | append: p }}{% endcapture %}{% endfor %}`,
		`{% for i in (1..1000) %}{% for j in (1..1000) %}{{ p }}{% endfor %}{% endfor %}`,
		`{% assign a = long | split: "" %}{% for i in (1..100000) %}{% if a == a and a == a %}{% endif %}{% endfor %}`,
		`{{ ((((((((p)))))))) }}`,
		`{{ "abc" | slice: 1, -5 }}{{ recs | sort: 1 }}`,
		`{% for r in recs %}{{ r.tags | join: p }}{% endfor %}`,
		strings.Repeat(`{% if p %}`, 32) + strings.Repeat(`{% endif %}`, 32),
		strings.Repeat(`{{ p }}`, 2000),
	}
	seeds = append(seeds, multiplyingTemplates...)
	seeds = append(seeds, `{{ p | truncate: 9223372036854775807 }}{{ (-9223372036854775807..9223372036854775807) | size }}`)
	for _, s := range seeds {
		f.Add(s, "x")
	}
	f.Fuzz(func(t *testing.T, instructions, p string) {
		spec := agent.Spec{
			ID: "fuzz.bounded", Version: "1.0.0", Name: "Fuzz", Instructions: instructions,
			Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "chat"}}}},
			Parameters:   []agent.PromptParameter{{Name: "p", Type: "string"}},
		}
		a, err := agent.Define(spec)
		if err != nil {
			return // Define refused it: nothing to bound
		}
		params := map[string]any{"p": p}
		for k, v := range boundedVars {
			params[k] = v
		}
		before := allocatedBytes()
		start := time.Now()
		cpu := threadCPU(func() {
			_, err = prompt.Render(a, prompt.Context{Parameters: params, Now: fixedNow})
		})
		elapsed := time.Since(start)
		allocated := allocatedBytes() - before
		if path := os.Getenv("KINDGI_FUZZ_TRACE"); path != "" {
			if f, ferr := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); ferr == nil {
				fmt.Fprintf(f, "TRACE %v %v %d %.60q\n", cpu, elapsed, allocated, instructions)
				f.Close()
			}
		}
		if cpu > boundTime {
			t.Errorf("render took %v of CPU (%v wall; bound %v): %.200q", cpu, elapsed, boundTime, instructions)
		}
		if allocated > boundBytes {
			t.Errorf("render allocated %d MiB (bound 64 MiB): %.200q", allocated>>20, instructions)
		}
		switch agents.CodeOf(err) {
		case "", agents.CodeRenderFailure, agents.CodeMissingParameter:
		default:
			t.Fatalf("error %T %v: want render-failure or missing-parameter", err, err)
		}
		if err != nil && (strings.Contains(err.Error(), "goroutine ") || strings.Contains(err.Error(), "stacktrace")) {
			t.Fatalf("error carries a stack trace: %.300q", err.Error())
		}
	})
}

// grow128K assigns s a string of 128 KiB (16 bytes doubled 13 times).
const grow128K = `{% assign s = 'xxxxxxxxxxxxxxxx' %}{% for i in (1..13) %}{% assign s = s | append: s %}{% endfor %}`

// multiplyingTemplates are templates of a few hundred bytes whose filters
// would build results many times the size of their input and arguments
// (16 GiB for the first): the filters measure the result first and refuse
// it, so they fail with render-failure without allocating it.
var multiplyingTemplates = []string{
	grow128K + `{{ s | replace: 'x', s | size }}`,
	grow128K + `{{ s | replace: '', s | size }}`,
	grow128K + `{{ (1..8000) | join: s | size }}`,
	grow128K + `{% assign l = s | split: '' %}{{ l | size }}`,
	grow128K + `{{ s | sample: 2 | size }}`,
	`{% assign a = '' | split: ',' %}{% for i in (1..1000) %}{% assign a = '' | split: ',' | push: a %}{% endfor %}{{ a | json: 10 | size }}`,
}

// TestMultiplyingFiltersBounded: each of multiplyingTemplates, accepted by
// agent.Define, fails with render-failure within the bounds of
// FuzzRenderBounded, where it used to kill the process out of memory.
func TestMultiplyingFiltersBounded(t *testing.T) {
	for _, src := range multiplyingTemplates {
		a, err := agent.Define(agent.Spec{
			ID: "multiplying", Version: "1.0.0", Name: "M", Instructions: src,
			Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "chat"}}}},
		})
		if err != nil {
			t.Fatalf("Define(%q) = %v", src, err)
		}
		before := allocatedBytes()
		_, err = prompt.Render(a, prompt.Context{Now: fixedNow})
		allocated := allocatedBytes() - before
		if agents.CodeOf(err) != agents.CodeRenderFailure {
			t.Errorf("Render(%.80q…) = %v; want render-failure", src[len(grow128K)-20:], err)
		}
		if allocated > boundBytes {
			t.Errorf("Render(%.80q…) allocated %d MiB (bound 64 MiB)", src, allocated>>20)
		}
	}
}

// TestRenderContextStops: RenderContext stops a render when its context is
// done, with the context's error (turn-aborted by agents.CodeOf), never a
// render-failure; Render of the same template is unchanged.
func TestRenderContextStops(t *testing.T) {
	a := testAgent(`{% for i in (1..100000) %}{% for j in (1..100000) %}{% endfor %}{% endfor %}`)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := prompt.RenderContext(ctx, a, prompt.Context{Now: fixedNow})
	if !errors.Is(err, context.Canceled) || agents.CodeOf(err) != agents.CodeTurnAborted {
		t.Fatalf("RenderContext(cancelled) = %v (code %q); want context.Canceled, turn-aborted", err, agents.CodeOf(err))
	}

	dctx, dcancel := context.WithTimeout(t.Context(), 5*time.Millisecond)
	defer dcancel()
	start := time.Now()
	_, err = prompt.RenderContext(dctx, a, prompt.Context{Now: fixedNow})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RenderContext(deadline) = %v; want context.DeadlineExceeded", err)
	}
	var rf *agents.RenderFailureError
	if errors.As(err, &rf) {
		t.Fatalf("a stopped render is a render-failure: %v", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("the render took %v to stop after its 5ms deadline", d)
	}

	// With a live context the result is Render's.
	b := testAgent(`{{ p | upcase }}`, agent.PromptParameter{Name: "p", Type: "string"})
	c := prompt.Context{Parameters: map[string]any{"p": "x"}, Now: fixedNow}
	got, err := prompt.RenderContext(t.Context(), b, c)
	want, werr := prompt.Render(b, c)
	if err != nil || werr != nil || got.Text != want.Text || got.Text != "X" {
		t.Fatalf("RenderContext = %q, %v; Render = %q, %v", got.Text, err, want.Text, werr)
	}
}

// panicky is a value whose conversion to a Liquid value panics.
type panicky struct{}

func (panicky) ToLiquid() any { panic("conversion failed") }

// TestRenderPanicIsClean: a panic inside the engine (a bound value whose
// ToLiquid panics while it is sorted) is a render-failure whose message,
// the one a journal keeps, has no Go stack trace.
func TestRenderPanicIsClean(t *testing.T) {
	recs := []any{panicky{}, panicky{}}
	_, err := prompt.Render(testAgent(`{{ recs | sort | first }}`), prompt.Context{Now: fixedNow, Parameters: map[string]any{"recs": recs}})
	var rf *agents.RenderFailureError
	if !errors.As(err, &rf) {
		t.Fatalf("Render = %v; want render-failure", err)
	}
	for _, s := range []string{"goroutine", "stacktrace", ".go:", "\n"} {
		if strings.Contains(err.Error(), s) {
			t.Fatalf("the error holds %q: %q", s, err.Error())
		}
	}
}

// TestHugeIntegerArguments: integer arguments past any length saturate
// (truncate: 9223372036854775807 keeps the string, as in LiquidJS, where
// it used to panic on a slice bound), and a range whose length overflows
// an int fails with render-failure under the meter instead of reporting a
// size of -1.
func TestHugeIntegerArguments(t *testing.T) {
	// "fail": render-failure.
	for src, want := range map[string]string{
		`{{ 'x' | truncate: 9223372036854775807 }}`:                "x",
		`{{ 'x' | truncate: -9223372036854775807 }}`:               "...",
		`{{ 'x y' | truncatewords: 9223372036854775807 }}`:         "x y",
		`{{ 'abc' | slice: 1, 9223372036854775807 }}`:              "bc",
		`{{ 'abc' | slice: 9223372036854775807, 2 }}x`:             "x",
		`{{ 'abc' | sample: 9223372036854775807 | size }}`:         "3",
		`{{ (-3..9223372036854775807) | slice: 0, 2 | join }}x`:    "fail",
		`{{ (-9223372036854775807..9223372036854775807) | size }}`: "fail",
		`{{ (0..9223372036854775807) | size }}`:                    "fail",
		`{{ (-9223372036854775807..0) | first }}`:                  "fail",
	} {
		res, err := prompt.Render(testAgent(src), prompt.Context{Now: fixedNow})
		switch {
		case want == "fail" && agents.CodeOf(err) != agents.CodeRenderFailure:
			t.Errorf("Render(%s) = %q, %v; want render-failure", src, res.Text, err)
		case want != "fail" && (err != nil || res.Text != want):
			t.Errorf("Render(%s) = %q, %v; want %q", src, res.Text, err, want)
		}
	}
}
