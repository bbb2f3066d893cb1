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

// leaseKeeper renews a driver's lease every third of its TTL until stopped.
// Losing the lease (another owner holds it) cancels the drive.
type leaseKeeper struct {
	stop chan struct{}
	done chan struct{}
	lost atomic.Bool
	once sync.Once
}

// keepLease starts renewing the lease; cancel is called with errLeaseLost
// when it is lost.
func (r *run) keepLease(ctx context.Context, cancel context.CancelCauseFunc) {
	k := &leaseKeeper{stop: make(chan struct{}), done: make(chan struct{})}
	r.lease = k
	ttl := r.ttl()
	go func() {
		defer close(k.done)
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-k.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				_, err := r.b.Runs.AcquireLease(ctx, bindings.LeaseInput{TenantID: r.tenantID, RunID: r.id, Owner: r.owner, TTL: ttl})
				if agents.CodeOf(err) == agents.CodeRunBusy {
					k.lost.Store(true)
					cancel(errLeaseLost)
					return
				}
			}
		}
	}()
}

// stopLease stops renewing and waits for the renewer to exit.
func (r *run) stopLease() {
	if r.lease == nil {
		return
	}
	r.lease.once.Do(func() { close(r.lease.stop) })
	<-r.lease.done
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
	_, _ = rand.Read(buf[:])
	return hex.EncodeToString(buf[:])
}
