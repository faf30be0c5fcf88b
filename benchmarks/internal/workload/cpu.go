package workload

import (
	"syscall"
	"time"
)

// CPUTime is the process's user plus system CPU time (getrusage), the
// cost of a benchmark independent of how long other jobs on a shared
// machine keep it waiting for a CPU.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
