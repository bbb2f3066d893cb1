//go:build unix

package memstore_test

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user + system) the process has used: on a
// shared, loaded machine it measures the work of a benchmark where wall
// time measures the scheduler.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
