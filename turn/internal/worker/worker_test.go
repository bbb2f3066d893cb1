package worker

import (
	"slices"
	"testing"
	"time"
)

// TestBackoffDelay: the retry wait after n+1 failed drives doubles from
// retryBase up to retryMax, of which at least half is kept (jitter).
func TestBackoffDelay(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want time.Duration // the wait without jitter
	}{
		{-1, retryBase}, {0, retryBase}, {1, 2 * retryBase}, {3, 8 * retryBase}, {7, retryMax}, {10, retryMax}, {1000, retryMax},
	} {
		for range 20 {
			if d := backoffDelay(tt.n); d < tt.want/2 || d > tt.want {
				t.Fatalf("backoffDelay(%d) = %v, want within [%v, %v]", tt.n, d, tt.want/2, tt.want)
			}
		}
	}
}

// TestIdleBackoff: an idle worker's wait doubles from 10 ms up to
// PollInterval, with jitter.
func TestIdleBackoff(t *testing.T) {
	w := New(Config[struct{}]{PollInterval: time.Second})
	for _, tt := range []struct {
		idle int
		want time.Duration
	}{
		{0, 10 * time.Millisecond}, {1, 20 * time.Millisecond}, {6, 640 * time.Millisecond}, {7, time.Second}, {16, time.Second}, {100, time.Second},
	} {
		if d := w.backoff(tt.idle); d < tt.want/2 || d > tt.want {
			t.Errorf("backoff(%d) = %v, want within [%v, %v]", tt.idle, d, tt.want/2, tt.want)
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
