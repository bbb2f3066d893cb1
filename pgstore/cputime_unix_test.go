//go:build unix

package pgstore

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system, nanoseconds) the test
// process has used: the client side of a benchmark, not PostgreSQL's.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// backendCPU is the CPU time (user and system, nanoseconds) the PostgreSQL
// backends of pids have used, read from /proc/<pid>/stat: the server side
// of a benchmark whose database runs on this machine. It is 0 where /proc
// has no such process (another host, another OS); the figures have the
// resolution of the kernel's clock tick (10 ms at USER_HZ 100), so read
// them over many operations.
func backendCPU(pids []int) int64 {
	var ticks int64
	for _, pid := range pids {
		raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return 0
		}
		// Fields after the parenthesised command name: state is field 3,
		// utime 14 and stime 15.
		s := string(raw)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 13 {
			return 0
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + st
	}
	const userHZ = 100 // sysconf(_SC_CLK_TCK) on Linux
	return ticks * int64(time.Second) / userHZ
}
