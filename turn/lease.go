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

// keepLease starts renewing the lease; cancel is called with errLeaseLost
// when it is lost.
func (r *run) keepLease(ctx context.Context, cancel context.CancelCauseFunc) {
	k := &leaseKeeper{}
	r.lease = k
	ttl := r.ttl()
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
		if r.unheld.Load() {
			// The run is not stored yet, or not leased yet: no lease to
			// renew.
			k.mu.Lock()
			if !k.stopped {
				k.timer.Reset(ttl / 3)
			}
			k.mu.Unlock()
			return
		}
		_, err := r.b.Runs.AcquireLease(ctx, bindings.LeaseInput{TenantID: r.tenantID, RunID: r.id, Owner: r.owner, TTL: ttl})
		if agents.CodeOf(err) == agents.CodeRunBusy {
			if busy := (*agents.RunBusyError)(nil); errors.As(err, &busy) && busy.Owner != "" {
				k.owner.Store(&busy.Owner)
			}
			k.lost.Store(true)
			cancel(errLeaseLost)
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
	if r.pend != nil {
		return // the run is not stored, or not leased: no lease to release
	}
	_ = r.b.Runs.ReleaseLease(context.WithoutCancel(ctx), r.tenantID, r.id, r.owner)
}

// checkLease fails fast once the lease is known to be lost (another owner
// took it: the renewal, or a write as read, was refused).
func (r *run) checkLease() error {
	if r.lease != nil && r.lease.lost.Load() {
		busy := &agents.RunBusyError{RunID: r.id}
		if o := r.lease.owner.Load(); o != nil {
			busy.Owner = *o
		}
		return busy
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
