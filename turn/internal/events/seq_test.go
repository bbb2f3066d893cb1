package events

import (
	"context"
	"errors"
	"testing"
)

// TestOf: every event comes in order after prev saw it, then the call's
// error; leaving early cancels the call and returns only once it has.
func TestOf(t *testing.T) {
	var prev []int
	boom := errors.New("boom")
	var got []int
	var gotErr error
	for e, err := range Of(t.Context(), func(_ context.Context, e int) { prev = append(prev, e) }, func(ctx context.Context, on func(context.Context, int)) error {
		for i := range 3 {
			on(ctx, i)
		}
		return boom
	}) {
		if err != nil {
			gotErr = err
			continue
		}
		got = append(got, e)
	}
	if len(got) != 3 || got[2] != 2 || len(prev) != 3 || !errors.Is(gotErr, boom) {
		t.Fatalf("events %v, prev %v, error %v", got, prev, gotErr)
	}

	returned := false
	for range Of(t.Context(), nil, func(ctx context.Context, on func(context.Context, int)) error {
		defer func() { returned = true }()
		for i := 0; ctx.Err() == nil; i++ {
			on(ctx, i)
		}
		return ctx.Err()
	}) {
		break
	}
	if !returned {
		t.Fatal("the loop ended before the call returned")
	}
}
