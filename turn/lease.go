package turn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// errLeaseLost is the cancellation cause of a drive whose lease another
// driver took.
var errLeaseLost = errors.New("lease on the run was lost")

// errWallTimeout is the cancellation cause of a drive past maxWallMs.
var errWallTimeout = errors.New("maxWallMs elapsed")

// leaseKeeper renews a driver's lease every third of its TTL until
// stopped, and ends the drive at its wall budget's deadline, on one timer
// (no goroutine waits while nothing is due, and a drive allocates no
// second context and timer for its budget). Losing the lease (another
// owner holds it) cancels the drive with errLeaseLost; the deadline
// cancels it with errWallTimeout.
type leaseKeeper struct {
	mu       sync.Mutex
	timer    *time.Timer
	stopped  bool
	running  sync.WaitGroup // renewals in flight
	lost     atomic.Bool
	r        *run
	ctx      context.Context // the drive's context
	cancel   context.CancelCauseFunc
	ttl      time.Duration
	next     time.Time // when the next renewal is due
	deadline time.Time // the wall budget's end (zero: none yet)
	wall     wallCtx   // the drive's context with the deadline (see withDeadline)
}

// keepLease starts renewing the lease; cancel is called with errLeaseLost
// when it is lost, and with errWallTimeout at the deadline withDeadline
// sets.
func (r *run) keepLease(ctx context.Context, cancel context.CancelCauseFunc) {
	k := &leaseKeeper{r: r, ctx: ctx, cancel: cancel, ttl: r.ttl()}
	r.lease = k
	k.mu.Lock()
	k.next = time.Now().Add(k.ttl / 3)
	k.timer = time.AfterFunc(k.ttl/3, k.fire)
	k.mu.Unlock()
}

// withDeadline makes the drive end at the wall budget's deadline, d from
// now, and returns the drive's context with that deadline: Deadline
// reports it, and once it passed Err is context.DeadlineExceeded and the
// cause errWallTimeout, as context.WithTimeoutCause's would be.
func (k *leaseKeeper) withDeadline(d time.Duration) context.Context {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := time.Now()
	k.deadline = now.Add(d)
	k.wall = wallCtx{Context: k.ctx, deadline: k.deadline}
	if !k.stopped && k.deadline.Before(k.next) {
		k.timer.Reset(d)
	}
	return &k.wall
}

// fire is the timer's: past the deadline it cancels the drive, else it
// renews the lease when due, then sets the timer for what comes next.
func (k *leaseKeeper) fire() {
	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return
	}
	now := time.Now()
	if !k.deadline.IsZero() && !now.Before(k.deadline) {
		k.mu.Unlock()
		k.cancel(errWallTimeout)
		return
	}
	renew := !now.Before(k.next)
	k.running.Add(1)
	k.mu.Unlock()
	defer k.running.Done()
	if k.ctx.Err() != nil {
		return // the drive is over
	}
	if renew {
		r := k.r
		_, err := r.b.Runs.AcquireLease(k.ctx, bindings.LeaseInput{TenantID: r.tenantID, RunID: r.id, Owner: r.owner, TTL: k.ttl})
		if agents.CodeOf(err) == agents.CodeRunBusy {
			k.lost.Store(true)
			k.cancel(errLeaseLost)
			return
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	now = time.Now()
	if renew {
		k.next = now.Add(k.ttl / 3)
	}
	due := k.next
	if !k.deadline.IsZero() && k.deadline.Before(due) {
		due = k.deadline
	}
	k.timer.Reset(due.Sub(now))
}

// wallCtx is a drive's context under its wall budget: the drive's own
// (cancelled at the deadline with errWallTimeout) reporting the deadline,
// and DeadlineExceeded once cancelled for it.
type wallCtx struct {
	context.Context
	deadline time.Time
}

// Deadline reports the wall budget's end (or an earlier one of the
// caller's context).
func (c *wallCtx) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Err is the drive's, context.DeadlineExceeded when the budget ended it.
func (c *wallCtx) Err() error {
	err := c.Context.Err()
	if err != nil && context.Cause(c.Context) == errWallTimeout {
		return context.DeadlineExceeded
	}
	return err
}

// stopLease stops renewing and waits for a renewal in flight.
func (r *run) stopLease() {
	k := r.lease
	if k == nil {
		return
	}
	k.mu.Lock()
	k.stopped = true
	k.timer.Stop()
	k.mu.Unlock()
	k.running.Wait()
}

// releaseLease stops renewing and gives the lease up (best effort: an
// unreleased lease simply expires).
func (r *run) releaseLease(ctx context.Context) {
	r.stopLease()
	_ = r.b.Runs.ReleaseLease(context.WithoutCancel(ctx), r.tenantID, r.id, r.owner)
}

// checkLease fails fast once the lease is known to be lost.
func (r *run) checkLease() error {
	if r.lease != nil && r.lease.lost.Load() {
		return &agents.RunBusyError{RunID: r.id}
	}
	return nil
}

func (r *run) ttl() time.Duration {
	if r.b.LeaseTTL > 0 {
		return r.b.LeaseTTL
	}
	return DefaultLeaseTTL
}

// newID returns a fresh id from the NewID seam or 128 random bits.
func newID(b *Bindings) string {
	if b.NewID != nil {
		return b.NewID()
	}
	var buf [16]byte
	var text [32]byte
	_, _ = rand.Read(buf[:])
	hex.Encode(text[:], buf[:])
	return string(text[:]) // one allocation (EncodeToString makes two)
}

// detached is context.WithoutCancel(ctx), or ctx itself when that is the
// same thing — a context that can never be cancelled and has no deadline
// (context.Background, a host's values on it) — without allocating.
func detached(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		if _, ok := ctx.Deadline(); !ok {
			return ctx
		}
	}
	return context.WithoutCancel(ctx)
}
