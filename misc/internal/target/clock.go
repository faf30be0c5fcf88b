package target

import "golang.org/x/sys/unix"

// MonotonicNow is this machine's CLOCK_MONOTONIC in nanoseconds, 0 if it
// cannot be read. It is the clock of the Go runtime's nanotime on Linux,
// one clock for every process of the machine: a reader converts the
// times a target publishes (a goroutine's wait start) with it.
func MonotonicNow() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return ts.Nano()
}
