package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// describeMachine returns the description written to machine.txt and the
// report: what ran, where, with which toolchains.
func describeMachine(ctx context.Context, tcs map[string]*toolchain) string {
	var b strings.Builder
	fmt.Fprintf(&b, "date:      %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "cpu:       %s\n", cpuModel())
	fmt.Fprintf(&b, "cores:     %d (runtime.NumCPU)\n", runtime.NumCPU())
	fmt.Fprintf(&b, "memory:    %s\n", procField("/proc/meminfo", "MemTotal"))
	fmt.Fprintf(&b, "kernel:    %s\n", firstLine("/proc/version"))
	fmt.Fprintf(&b, "arch:      %s/%s\n", runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "loadavg:   %s (at start)\n", firstLine("/proc/loadavg"))
	for _, n := range []string{"upstream", "fork"} {
		tc := tcs[n]
		fmt.Fprintf(&b, "%-10s %s (GOROOT %s)\n", n+":", tc.version, tc.goroot)
	}
	if out, err := exec.CommandContext(ctx, "git", "-C", tcs["fork"].goroot, "log", "-1", "--format=%h %s").Output(); err == nil {
		fmt.Fprintf(&b, "fork HEAD: %s\n", strings.TrimSpace(string(out)))
	}
	return b.String()
}

func cpuModel() string {
	for _, key := range []string{"model name", "Model", "CPU part"} {
		if v := procField("/proc/cpuinfo", key); v != "unknown" {
			return v
		}
	}
	return "unknown"
}

// procField returns the value of the first "key: value" line of a /proc file.
func procField(path, key string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func firstLine(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return strings.TrimSpace(line)
}
