package agent

import (
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestContainerID(t *testing.T) {
	id := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for cg, want := range map[string]string{
		"0::/system.slice/docker-" + id + ".scope\n":                                    id,
		"0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-" + id + ".scope\n": id,
		"12:pids:/docker/" + id + "\n11:cpu:/docker/" + id + "\n":                       id,
		"0::/kubepods/besteffort/pod1234/" + id + "\n":                                  id,
		"0::/user.slice/user-0.slice/session-1.scope\n":                                 "",
		"0::/\n":                             "",
		"garbage":                            "",
		"0::/docker-" + id[:63] + ".scope\n": "",
		"0::/system.slice/crio-" + id + ".scope/container\n": id,
	} {
		if got := ContainerID(cg); got != want {
			t.Errorf("ContainerID(%q) = %q, want %q", cg, got, want)
		}
	}
}

func TestEnviron(t *testing.T) {
	env := []byte("A=1\x00OTEL_SERVICE_NAME=svc\x00OTEL_SERVICE_NAME_X=no\x00")
	if got := environ(env, "OTEL_SERVICE_NAME"); got != "svc" {
		t.Errorf("environ = %q, want svc", got)
	}
	if got := environ(env, "B"); got != "" {
		t.Errorf("environ of a missing name = %q", got)
	}
}

func TestFileSafe(t *testing.T) {
	for in, want := range map[string]string{"svc": "svc", "a/b": "a_b", "": "_", "..": "_", "x\ny": "x_y"} {
		if got := fileSafe(in); got != want {
			t.Errorf("fileSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

var guardSink byte

// TestGuard: a fault becomes an error; another panic goes on.
func TestGuard(t *testing.T) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	m, err := syscall.Mmap(-1, 0, 4096, syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	if err := guard(func() { guardSink = m[0] }); err == nil || !strings.Contains(err.Error(), "memory fault") {
		t.Errorf("guard of a fault: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("guard swallowed a panic that is not a fault")
		}
	}()
	guard(func() { panic("other") })
}

func TestPollInterval(t *testing.T) {
	for _, c := range []struct {
		hz, ncpu int
		want     time.Duration
	}{{19, 2, maxPoll}, {19, 64, 45 * time.Millisecond}, {999, 64, minPoll}} {
		if got := pollInterval(c.hz, c.ncpu); got.Round(5*time.Millisecond) != c.want {
			t.Errorf("pollInterval(%d, %d) = %v, want about %v", c.hz, c.ncpu, got, c.want)
		}
	}
}
