package prompt_test

import (
	"runtime"
	"syscall"
	"time"
)

// threadCPU runs f on one locked OS thread and returns the CPU time that
// thread spent: a render's own cost, whatever else the machine runs.
func threadCPU(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := threadRusage()
	f()
	return threadRusage() - before
}

func threadRusage() time.Duration {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
