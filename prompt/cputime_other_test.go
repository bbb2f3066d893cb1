//go:build !linux

package prompt_test

import "time"

// threadCPU runs f and returns its wall time (no per-thread CPU clock
// here).
func threadCPU(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}
