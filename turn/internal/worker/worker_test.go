package worker

import (
	"slices"
	"testing"
	"time"
)

// TestBackoff: the retry wait after n+1 failed drives doubles from
// retryBase up to retryMax, and an idle worker's wait after n empty claims
// from 10 ms up to PollInterval; jitter keeps at least half of each.
func TestBackoff(t *testing.T) {
	idle := New(Config[struct{}]{PollInterval: time.Second}).backoff
	for _, tt := range []struct {
		wait string
		of   func(int) time.Duration
		n    int
		want time.Duration // the wait without jitter
	}{
		{"retry", backoffDelay, -1, retryBase}, {"retry", backoffDelay, 0, retryBase}, {"retry", backoffDelay, 1, 2 * retryBase},
		{"retry", backoffDelay, 3, 8 * retryBase}, {"retry", backoffDelay, 7, retryMax}, {"retry", backoffDelay, 1000, retryMax},
		{"idle", idle, 0, 10 * time.Millisecond}, {"idle", idle, 1, 20 * time.Millisecond}, {"idle", idle, 6, 640 * time.Millisecond},
		{"idle", idle, 7, time.Second}, {"idle", idle, 16, time.Second}, {"idle", idle, 100, time.Second},
	} {
		for range 20 {
			if d := tt.of(tt.n); d < tt.want/2 || d > tt.want {
				t.Fatalf("%s wait after %d = %v, want within [%v, %v]", tt.wait, tt.n, d, tt.want/2, tt.want)
			}
		}
	}
}

// TestTenantsRotate: every claim starts at the next tenant, so that none
// is favoured; one tenant or none is passed as it is.
func TestTenantsRotate(t *testing.T) {
	w := New(Config[struct{}]{TenantIDs: []string{"a", "b", "c"}})
	var got [][]string
	for range 4 {
		w.seq.Add(1)
		got = append(got, w.tenants())
	}
	want := [][]string{{"b", "c", "a"}, {"c", "a", "b"}, {"a", "b", "c"}, {"b", "c", "a"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("tenants = %v, want %v", got, want)
	}
	if one := New(Config[struct{}]{TenantIDs: []string{"a"}}).tenants(); !slices.Equal(one, []string{"a"}) {
		t.Errorf("one tenant: %v", one)
	}
}
