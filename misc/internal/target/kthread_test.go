package target

import (
	"os"
	"testing"
)

func TestIsKernelThread(t *testing.T) {
	if IsKernelThread(os.Getpid()) {
		t.Errorf("this process is taken for a kernel thread")
	}
	// kthreadd is process 2 wherever /proc shows the kernel's threads (not
	// in a PID namespace of its own).
	if b, err := os.ReadFile("/proc/2/comm"); err != nil || string(b) != "kthreadd\n" {
		t.Skip("no kthreadd as process 2 here")
	}
	if !IsKernelThread(2) {
		t.Errorf("kthreadd is not taken for a kernel thread")
	}
}
