package drive

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// ErrLeaseLost is the cancellation cause of a drive whose lease another
// driver took.
var ErrLeaseLost = errors.New("lease on the run was lost")

// leaseKeeper renews a driver's lease every third of its TTL until
// stopped, on a timer (no goroutine waits while nothing is due). Losing the
// lease (another owner holds it) cancels the drive.
type leaseKeeper struct {
	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
	running sync.WaitGroup // renewals in flight
	lost    atomic.Bool
	owner   atomic.Pointer[string] // who holds the lease once it is lost, when the store said
}

// KeepLease starts renewing the lease; cancel is called with ErrLeaseLost
// when it is lost.
func (j *Journal) KeepLease(ctx context.Context, cancel context.CancelCauseFunc) {
	k := &leaseKeeper{}
	j.lease = k
	ttl := j.leaseTTL
	var renew func()
	renew = func() {
		k.mu.Lock()
		if k.stopped {
			k.mu.Unlock()
			return
		}
		k.running.Add(1)
		k.mu.Unlock()
		defer k.running.Done()
		if ctx.Err() != nil {
			return // the drive is over
		}
		if j.unheld.Load() {
			// The run is not stored yet, or not leased yet: no lease to
			// renew.
			k.mu.Lock()
			if !k.stopped {
				k.timer.Reset(ttl / 3)
			}
			k.mu.Unlock()
			return
		}
		_, err := j.runs.AcquireLease(ctx, bindings.LeaseInput{TenantID: j.tenantID, RunID: j.runID, Owner: j.owner, TTL: ttl})
		if agents.CodeOf(err) == agents.CodeRunBusy {
			if busy := (*agents.RunBusyError)(nil); errors.As(err, &busy) && busy.Owner != "" {
				k.owner.Store(&busy.Owner)
			}
			k.lost.Store(true)
			cancel(ErrLeaseLost)
			return
		}
		k.mu.Lock()
		if !k.stopped {
			k.timer.Reset(ttl / 3)
		}
		k.mu.Unlock()
	}
	k.mu.Lock()
	k.timer = time.AfterFunc(ttl/3, renew)
	k.mu.Unlock()
}

// StopLease stops renewing and waits for a renewal in flight.
func (j *Journal) StopLease() {
	k := j.lease
	if k == nil {
		return
	}
	k.mu.Lock()
	k.stopped = true
	k.timer.Stop()
	k.mu.Unlock()
	k.running.Wait()
}

// ReleaseLease stops renewing and gives the lease up (best effort: an
// unreleased lease simply expires).
func (j *Journal) ReleaseLease(ctx context.Context) {
	j.StopLease()
	if j.pend != nil {
		return // the run is not stored, or not leased: no lease to release
	}
	_ = j.runs.ReleaseLease(context.WithoutCancel(ctx), j.tenantID, j.runID, j.owner)
}

// CheckLease fails fast once the lease is known to be lost (another owner
// took it: the renewal, or a write as read, was refused).
func (j *Journal) CheckLease() error {
	if j.lease != nil && j.lease.lost.Load() {
		busy := &agents.RunBusyError{RunID: j.runID}
		if o := j.lease.owner.Load(); o != nil {
			busy.Owner = *o
		}
		return busy
	}
	return nil
}

// LeaseLost reports whether the drive lost its lease.
func (j *Journal) LeaseLost() bool { return j.lease != nil && j.lease.lost.Load() }

// Detached is context.WithoutCancel(ctx), or ctx itself when that is the
// same thing — a context that can never be cancelled and has no deadline
// (context.Background, a host's values on it) — without allocating.
func Detached(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		if _, ok := ctx.Deadline(); !ok {
			return ctx
		}
	}
	return context.WithoutCancel(ctx)
}

// Live reports an abort before a step starts: a lost lease, or ctx done.
func (j *Journal) Live(ctx context.Context) error {
	if err := j.CheckLease(); err != nil {
		return err
	}
	return ctx.Err()
}
