//go:build !unix

package memstore_test

import "time"

// cpuTime is unavailable here; benchmarks report wall time only.
func cpuTime() (time.Duration, bool) { return 0, false }
