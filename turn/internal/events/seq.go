// Package events is the plumbing of turn's events: a call that reports
// its events to a callback as a range-over-func sequence (Of: the call
// runs in a goroutine, each event waits until the loop body has taken it,
// and leaving the loop early cancels the call and waits for it to return,
// so no goroutine outlives the loop; turn.Events is a turn's Invoke as
// such a sequence), a kind-first JSON object (WithKind) and the one-line
// text of a node event (Node). It does not import turn.
package events

import (
	"context"
	"iter"
)

// Of runs call once the sequence is ranged over and yields the events it
// reports to its on callback, in order, then (zero, err) when call
// returns a non-nil err. prev, when set, receives every event first (a
// host's own callback). Each event's delivery waits for the loop body;
// leaving the loop early (or a panic in its body) cancels the context
// call was given — the cancellation comes first, so that a call let go
// from the event it waits in already sees it — and waits for call to
// return.
func Of[E any](ctx context.Context, prev func(context.Context, E), call func(ctx context.Context, on func(context.Context, E)) error) iter.Seq2[E, error] {
	return func(yield func(E, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		events := make(chan E)
		next := make(chan struct{})
		stopped := make(chan struct{})
		done := make(chan error, 1)
		on := func(ctx context.Context, e E) {
			if prev != nil {
				prev(ctx, e)
			}
			select {
			case events <- e:
			case <-stopped:
				return
			}
			select {
			case <-next:
			case <-stopped:
			}
		}
		go func() {
			done <- call(ctx, on)
		}()
		finished := false
		defer func() {
			// Left early (or the loop body panicked): stop the call and
			// wait for it.
			if !finished {
				cancel()
				close(stopped)
				<-done
			}
		}()
		for {
			select {
			case e := <-events:
				if !yield(e, nil) {
					return
				}
				next <- struct{}{}
			case err := <-done:
				finished = true
				if err != nil {
					var zero E
					yield(zero, err)
				}
				return
			}
		}
	}
}
