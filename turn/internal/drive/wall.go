package drive

import (
	"context"
	"math"
	"time"

	agents "github.com/kindgi/agents"
)

// WallClock bounds the drive's ctx by what is left of the run's
// wall-clock budget, maxWallMs less the elapsedMs of earlier drives (a
// finished run folded, Replaying, gets all of it: its budget no longer
// matters), with cause as the cancellation cause. A budget spent already
// fails the run for good (Failed): turn-aborted, reason timeout.
func (j *Journal) WallClock(ctx context.Context, maxWallMs, elapsedMs int64, cause error) (context.Context, context.CancelFunc, error) {
	remaining := maxWallMs - elapsedMs
	if j.Replaying {
		remaining = maxWallMs
	}
	if remaining <= 0 {
		j.Failed = true
		return ctx, func() {}, &agents.TurnAbortedError{Reason: agents.AbortTimeout, Err: cause}
	}
	wall, cancel := context.WithTimeoutCause(ctx, MsDuration(remaining), cause)
	return wall, cancel, nil
}

// MsDuration converts a positive number of milliseconds to a Duration,
// saturating at the longest Duration (about 292 years) instead of
// overflowing: a maxWallMs or approval timeout of math.MaxInt64 is "no
// practical limit", never a negative, already expired one.
func MsDuration(ms int64) time.Duration {
	if ms > int64(math.MaxInt64/time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}
