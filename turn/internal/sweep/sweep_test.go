package sweep

import (
	"context"
	"errors"
	"testing"

	agents "github.com/kindgi/agents"
)

// TestEachPage: pages are asked for after the last ref of the page
// before, until a short page; a listing error is coded with the sweep's
// op, a visit's error stops the sweep, and a cancelled context stops it
// with turn-aborted before the next listing.
func TestEachPage(t *testing.T) {
	lists := func(sizes ...int) (func(context.Context, int, int) ([]int, error), *[]int) {
		var afters []int
		next := 0
		return func(_ context.Context, after, limit int) ([]int, error) {
			afters = append(afters, after)
			if limit != page {
				t.Fatalf("limit %d, want %d", limit, page)
			}
			if len(afters) > len(sizes) {
				return nil, errors.New("listed past the last page")
			}
			var refs []int
			for range sizes[len(afters)-1] {
				next++
				refs = append(refs, next)
			}
			return refs, nil
		}, &afters
	}
	t.Run("pages", func(t *testing.T) {
		list, afters := lists(page, page, 3)
		visited := 0
		if err := eachPage(t.Context(), "op", list, func(int) error { visited++; return nil }); err != nil {
			t.Fatal(err)
		}
		if visited != 2*page+3 || len(*afters) != 3 || (*afters)[0] != 0 || (*afters)[1] != page || (*afters)[2] != 2*page {
			t.Errorf("visited %d, afters %v", visited, *afters)
		}
	})
	t.Run("listing error", func(t *testing.T) {
		err := eachPage(t.Context(), "list things", func(context.Context, int, int) ([]int, error) { return nil, errors.New("down") },
			func(int) error { return nil })
		var pe *agents.PersistenceError
		if !errors.As(err, &pe) || pe.Op != "list things" {
			t.Errorf("err = %v, want persistence error of op list things", err)
		}
	})
	t.Run("visit error", func(t *testing.T) {
		list, _ := lists(page, 3)
		stop := errors.New("stop")
		visited := 0
		err := eachPage(t.Context(), "op", list, func(int) error { visited++; return stop })
		if err != stop || visited != 1 {
			t.Errorf("err = %v after %d visits, want stop after 1", err, visited)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		list, afters := lists(1)
		err := eachPage(ctx, "op", list, func(int) error { return nil })
		if agents.CodeOf(err) != agents.CodeTurnAborted || len(*afters) != 0 {
			t.Errorf("err = %v after %d listings, want turn-aborted before any", err, len(*afters))
		}
	})
}
