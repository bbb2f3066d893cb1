package packserver

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// scrubEnvValue overwrites with NUL bytes the value of name in the
// environment block the process was started with, so that it cannot be
// read back through /proc/self/environ once the variable is unset:
// os.Unsetenv only changes the environment the program sees (Go keeps a
// copy), while the kernel keeps showing the original block. The block's
// address comes from /proc/self/stat (env_start, env_end) and it is
// written through /proc/self/mem. This is best effort: where /proc is not
// available the variable is still unset.
func scrubEnvValue(name string) {
	start, end, ok := envBlock()
	if !ok {
		return
	}
	block, err := os.ReadFile("/proc/self/environ")
	if err != nil || int64(len(block)) > end-start {
		return
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer mem.Close()
	prefix := []byte(name + "=")
	for off := 0; off < len(block); {
		entry := block[off:]
		if i := bytes.IndexByte(entry, 0); i >= 0 {
			entry = entry[:i]
		}
		if bytes.HasPrefix(entry, prefix) && len(entry) > len(prefix) {
			zeros := make([]byte, len(entry)-len(prefix))
			_, _ = mem.WriteAt(zeros, start+int64(off+len(prefix)))
		}
		off += len(entry) + 1
	}
}

// envBlock returns the start and end address of the process's initial
// environment block: fields 50 and 51 of /proc/self/stat.
func envBlock() (start, end int64, ok bool) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name (field 2) may hold spaces; fields after it start at
	// field 3.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, false
	}
	fields := strings.Fields(string(stat[i+1:]))
	const envStart, envEnd = 50 - 3, 51 - 3
	if len(fields) <= envEnd {
		return 0, 0, false
	}
	s, err1 := strconv.ParseInt(fields[envStart], 10, 64)
	e, err2 := strconv.ParseInt(fields[envEnd], 10, 64)
	if err1 != nil || err2 != nil || s <= 0 || e <= s {
		return 0, 0, false
	}
	return s, e, true
}
