package bindingstest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	agents "github.com/kindgi/agents"
)

// The checks and tools the cases share.

// mustReturn is must for a call that also returns a value: an accessor
// returns mustReturn(call(...))(t, "Call"), which fails t on the call's
// error (what names it) and is the value otherwise.
func mustReturn[T any](v T, err error) func(t *testing.T, what string) T {
	return func(t *testing.T, what string) T {
		t.Helper()
		must(t, what, err)
		return v
	}
}

// wantCode fails the test unless err carries code.
func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: got no error, want code %q", what, code)
	}
	if got := agents.CodeOf(err); got != code {
		t.Fatalf("%s: got error %v with code %q, want code %q", what, err, got, code)
	}
}

// must fails the test on a non-nil error.
func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v (code %q)", what, err, agents.CodeOf(err))
	}
}

// jsonEqual compares JSON documents by value, so a backend that
// reformats stored JSON (PostgreSQL's jsonb) still compares equal.
func jsonEqual(a, b json.RawMessage) bool {
	if len(bytes.TrimSpace(a)) == 0 || len(bytes.TrimSpace(b)) == 0 {
		return len(bytes.TrimSpace(a)) == len(bytes.TrimSpace(b))
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return bytes.Equal(a, b)
	}
	return cmp.Equal(va, vb)
}

// cmpOpts compares stored values: JSON by value, times by instant (cmp
// uses time.Time.Equal), nil and empty slices and maps alike.
var cmpOpts = []cmp.Option{
	// Both options would apply to two empty RawMessages; the filter keeps
	// them apart (cmp panics on ambiguous options).
	cmp.FilterValues(func(a, b json.RawMessage) bool { return len(a) > 0 || len(b) > 0 }, cmp.Comparer(jsonEqual)),
	cmpopts.EquateEmpty(),
}

// diff fails the test when got and want differ.
func diff(t *testing.T, what string, got, want any, opts ...cmp.Option) {
	t.Helper()
	if d := cmp.Diff(want, got, append(append([]cmp.Option{}, cmpOpts...), opts...)...); d != "" {
		t.Fatalf("%s mismatch (-want +got):\n%s", what, d)
	}
}

// canceled returns a context that is already cancelled.
func canceled(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx
}

// errIs fails t unless err is target.
func errIs(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error %v, want %v", what, err, target)
	}
}

// project maps xs through f: the ids or keys a case compares.
func project[T, U any](xs []T, f func(T) U) []U {
	out := make([]U, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// racers is how many callers the concurrent cases start.
const racers = 16

// concurrently calls call(i) for every i below n, each on its own
// goroutine, all released at once, and returns when every call has.
func concurrently(n int, call func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			call(i)
		})
	}
	close(start)
	wg.Wait()
}

// raceOne makes racers callers (racer i named "racer-i") call at once and
// returns the index of the one whose call succeeded. It fails t unless
// exactly one did ("racers 2 and 5 both " + what), handing every other
// racer's error to lost, which fails t unless it is the refusal the case
// wants.
func raceOne(t *testing.T, what string, call func(i int, racer string) error, lost func(racer string, err error)) int {
	t.Helper()
	errs := make([]error, racers)
	concurrently(racers, func(i int) { errs[i] = call(i, fmt.Sprintf("racer-%d", i)) })
	winner := -1
	for i, err := range errs {
		if err != nil {
			lost(fmt.Sprintf("racer-%d", i), err)
			continue
		}
		if winner >= 0 {
			t.Fatalf("racers %d and %d both %s", winner, i, what)
		}
		winner = i
	}
	if winner < 0 {
		t.Fatalf("no racer %s", what)
	}
	return winner
}

// wantOneWon fails t on any error of concurrent calls (call i named
// call+" i") and unless exactly one of them reports won.
func wantOneWon(t *testing.T, call, what string, won []bool, errs []error) {
	t.Helper()
	wins := 0
	for i := range errs {
		must(t, fmt.Sprintf("%s %d", call, i), errs[i])
		if won[i] {
			wins++
		}
	}
	if wins != 1 {
		t.Fatalf("%d of %d %s, want exactly 1", wins, len(errs), what)
	}
}

// listAll pages through a listing limit at a time (list returns the page
// after a ref, the zero ref asking for the first) and returns the whole
// listing. It fails t when a page is over the limit or the listing is out
// of less's order.
func listAll[R any](t *testing.T, what string, limit int, list func(after R) ([]R, error), less func(a, b R) bool) []R {
	t.Helper()
	var all []R
	var after R
	for {
		page, err := list(after)
		must(t, what, err)
		if len(page) > limit {
			t.Fatalf("%s: page of %d, limit %d", what, len(page), limit)
		}
		all = append(all, page...)
		if len(page) < limit {
			break
		}
		after = page[len(page)-1]
	}
	wantOrdered(t, what, all, less)
	return all
}

// wantOrdered fails t unless every element of xs is less than the next.
func wantOrdered[R any](t *testing.T, what string, xs []R, less func(a, b R) bool) {
	t.Helper()
	for i := 1; i < len(xs); i++ {
		if !less(xs[i-1], xs[i]) {
			t.Fatalf("%s out of order at %d: %+v then %+v", what, i, xs[i-1], xs[i])
		}
	}
}
