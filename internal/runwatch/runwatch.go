// Package runwatch holds what the reference stores' WatchRuns share: the
// set of watcher channels, fed without ever blocking the change that is
// being told, and the empty RunChange that tells a watcher it fell behind.
package runwatch

import "github.com/kindgi/agents/bindings"

// Buffer is how many changes a watcher may fall behind by before it misses
// one (and is then told so).
const Buffer = 64

// Subscribers is a set of watcher channels. Its zero value is ready to use.
// It is not safe for concurrent use: its owner guards it with its own lock.
type Subscribers struct {
	subs map[chan bindings.RunChange]bool // true: it missed a change
}

// Add makes a watcher channel of Buffer changes and adds it.
func (s *Subscribers) Add() chan bindings.RunChange {
	if s.subs == nil {
		s.subs = map[chan bindings.RunChange]bool{}
	}
	ch := make(chan bindings.RunChange, Buffer)
	s.subs[ch] = false
	return ch
}

// Remove takes ch out of the set (it does not close it) and returns how
// many watchers are left.
func (s *Subscribers) Remove(ch chan bindings.RunChange) int {
	delete(s.subs, ch)
	return len(s.subs)
}

// Fanout delivers c to every watcher without blocking; a watcher whose
// buffer is full misses it and gets an empty RunChange once it has room.
func (s *Subscribers) Fanout(c bindings.RunChange) {
	for ch, missed := range s.subs {
		if missed {
			select {
			case ch <- bindings.RunChange{}:
				missed = false
			default:
				continue
			}
		}
		select {
		case ch <- c:
		default:
			missed = true
		}
		s.subs[ch] = missed
	}
}
