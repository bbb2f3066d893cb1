package wait

import (
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
)

// TestLeaseHeld: a run's lease is held while it has an owner whose lease
// has not expired on the given clock (or never expires).
func TestLeaseHeld(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	for _, tt := range []struct {
		name string
		run  bindings.Run
		want bool
	}{
		{"no owner", bindings.Run{LeaseExpiresAt: now.Add(time.Minute)}, false},
		{"no expiry", bindings.Run{LeaseOwner: "w"}, true},
		{"live", bindings.Run{LeaseOwner: "w", LeaseExpiresAt: now.Add(time.Second)}, true},
		{"expired", bindings.Run{LeaseOwner: "w", LeaseExpiresAt: now.Add(-time.Second)}, false},
		{"expiring now", bindings.Run{LeaseOwner: "w", LeaseExpiresAt: now}, false},
	} {
		if got := leaseHeld(clock, tt.run); got != tt.want {
			t.Errorf("%s: leaseHeld = %v, want %v", tt.name, got, tt.want)
		}
	}
	if !leaseHeld(nil, bindings.Run{LeaseOwner: "w", LeaseExpiresAt: time.Now().Add(time.Hour)}) {
		t.Error("nil clock: a lease an hour from now is not held")
	}
}
