package golineagereceiver

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"fpsafe.dev/misc/golineage/internal/agent"
	"fpsafe.dev/misc/golineage/internal/ebpf"
	"fpsafe.dev/misc/golineage/internal/otlpout"
	"fpsafe.dev/misc/internal/gobin"
	"fpsafe.dev/misc/internal/lineageabi"
)

// TestConfig: the default configuration is valid; bad values are not.
func TestConfig(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	if off := *cfg; off.Parked != agent.DefaultParked || func() error { off.Parked = 0; return off.Validate() }() != nil {
		t.Errorf("default parked %v, or parked 0 (no off-CPU profile) refused", cfg.Parked)
	}
	for _, bad := range []func(c *Config){
		func(c *Config) { c.Hz = 0 },
		func(c *Config) { c.Interval = time.Millisecond },
		func(c *Config) { c.Queue = 0 },
		func(c *Config) { c.Parked = time.Millisecond },
	} {
		c := *cfg
		bad(&c)
		if c.Validate() == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
}

// TestReceiver runs the receiver in a pipeline made of a sink: a
// fork-built program's profiles arrive, named by its service, and
// Shutdown leaves nothing attached.
func TestReceiver(t *testing.T) {
	if err := ebpf.CheckPrivileges(""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the receiver must run under CI: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	exe := filepath.Join(t.TempDir(), "busy")
	if out, err := exec.Command("go", "build", "-o", exe, "../testdata/busy").CombinedOutput(); err != nil {
		t.Fatalf("building the fixture: %v\n%s", err, out)
	}
	if b, err := gobin.Open(exe); err != nil {
		t.Fatal(err)
	} else if _, err := lineageabi.Find(b.ELF); err != nil {
		b.Close()
		t.Skipf("skipping: the fixture has no lineage ABI (the go command on PATH is not the fork's): %v", err)
	} else {
		b.Close()
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "OTEL_SERVICE_NAME=busy-receiver")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.Hz, cfg.Interval = 99, 300*time.Millisecond
	sink := new(consumertest.ProfilesSink)
	r, err := f.CreateProfiles(context.Background(), receivertest.NewNopSettings(Type), cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	found := func() bool {
		for _, pd := range sink.AllProfiles() {
			ps, err := otlpout.Read(pd)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ps {
				if p.Resource["process.pid"] == int64(cmd.Process.Pid) && p.Resource["service.name"] == "busy-receiver" && len(p.Samples) > 0 {
					return true
				}
			}
		}
		return false
	}
	deadline := time.Now().Add(10 * time.Second)
	for !found() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if !found() {
		t.Fatalf("no profile of the fixture (pid %d) in %d batches", cmd.Process.Pid, len(sink.AllProfiles()))
	}
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		if l, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); strings.Contains(l, "perf_event") || strings.Contains(l, "bpf") {
			t.Errorf("fd %s -> %s left open after Shutdown", e.Name(), l)
		}
	}
	// A receiver that never started shuts down cleanly.
	r2, _ := f.CreateProfiles(context.Background(), receivertest.NewNopSettings(Type), cfg, sink)
	if err := r2.Shutdown(context.Background()); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown without Start: %v", err)
	}
}
