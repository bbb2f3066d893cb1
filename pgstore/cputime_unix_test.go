//go:build unix

package pgstore

import "syscall"

// processCPU is the CPU time (user and system, nanoseconds) the test
// process has used: the client side of a benchmark, not PostgreSQL's.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
